"""The control protocol (docs/control-and-events.md): one JSON request line, one JSON response line.

Every command is built here once, as a `Command` that holds its request and how to read its response, so the
blocking client below (`Peripheral`) and the asyncio one (`blemu.aio.AsyncPeripheral`) send the same requests and
return the same types.
"""

from __future__ import annotations

import json
import os
import socket
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Generic, Iterator, List, Mapping, Optional, TypeVar, Union

from .events import Event, EventLog
from .handlers import Handler, HandlerFunction, HandlerRefused

if TYPE_CHECKING:  # aio imports this module
    from .aio import AsyncPeripheral

T = TypeVar("T")


class ControlError(Exception):
    """The peripheral refused a command: `command` is what was asked, `reason` what it answered."""

    def __init__(self, command: str, reason: str) -> None:
        super().__init__(f"blemu {command}: {reason}")
        self.command = command
        self.reason = reason


class ControlUnavailable(ControlError):
    """The control socket could not be reached or closed without answering (the peripheral is not running)."""


@dataclass(frozen=True)
class Value:
    """A characteristic's value: its bytes, and its fields decoded by the profile's layout (empty without one)."""

    id: str
    bytes: bytes
    fields: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Schedule:
    """One of the profile's schedules as the peripheral runs it."""

    id: str
    interval_ms: int
    paused: bool
    running: bool
    recorded: bool = False
    """A replay sent at its rows' own times (no interval: ``interval_ms`` is 0)."""


@dataclass(frozen=True)
class Counters:
    """What the peripheral counted (docs/control-and-events.md, `counters`); `a - b` is what happened between."""

    requests: int
    answered: int
    notifications_queued: int
    notifications_sent: int
    notifications_dropped: int
    raw: Dict[str, int]

    @property
    def unanswered(self) -> int:
        """Requests not answered yet: 0 whenever nothing is in flight, or a request was lost."""
        return self.requests - self.answered

    def __sub__(self, earlier: "Counters") -> "Counters":
        """The counts since `earlier`, every raw counter included."""
        return _counters({key: value - earlier.raw.get(key, 0) for key, value in self.raw.items()})


@dataclass(frozen=True)
class Central:
    """A connected central as the peripheral knows it (`centrals`)."""

    id: str
    """bluetoothd's device path, e.g. ``/org/bluez/hci0/dev_00_AA_01_01_00_01``; `*` on BlueZ before 5.76, whose
    notify socket serves every central at once."""
    maximum_update_value_length: int
    subscriptions: List[str]
    """The ids of the characteristics it is subscribed to."""


@dataclass(frozen=True)
class Disconnect:
    """A central that left: `reason` and `message` where bluetoothd said why (5.83 and later), else None."""

    central: str
    reason: Optional[str] = None
    """Remote, Local, Timeout, Authentication, Suspend or Unknown."""
    message: Optional[str] = None


@dataclass(frozen=True)
class PairingStep:
    """A pairing step the peripheral's side was asked (`pairing`)."""

    central: str
    method: str
    """``display-passkey`` (type `passkey` on the central), ``just-works``, ..."""
    accepted: bool
    passkey: Optional[str] = None
    """Six digits, where the method shows one."""


@dataclass(frozen=True)
class Command(Generic[T]):
    """One control request and how to read its response into a `T`."""

    request: Dict[str, Any]
    parse: Callable[[Dict[str, Any]], T]

    @property
    def name(self) -> str:
        """The command's name, for errors."""
        return str(self.request.get("command", "?"))


def request_line(request: Mapping[str, Any]) -> bytes:
    """The request as the one line the socket reads."""
    return (json.dumps(dict(request), separators=(",", ":")) + "\n").encode()


def response(command: str, line: bytes, control: str) -> Dict[str, Any]:
    """The response line read, or `ControlError` when it says not ok (`ControlUnavailable` when there is none)."""
    if not line.endswith(b"\n"):
        raise ControlUnavailable(command, f"{control} closed without answering")
    answer: Dict[str, Any] = json.loads(line)
    if not answer.get("ok"):
        raise ControlError(command, str(answer.get("error", "refused")))
    return answer


class Commands:
    """Every command of the protocol, as a `Command` to send (`Peripheral` and `AsyncPeripheral` run them)."""

    @staticmethod
    def get(id: str) -> Command[Value]:
        """The current value of characteristic `id`."""
        return Command({"command": "get", "id": id}, _value)

    @staticmethod
    def set(id: str, value: Optional[bytes] = None, fields: Optional[Mapping[str, Any]] = None) -> Command[Value]:
        """Stores `value` (bytes) or changes the named `fields` of the current value."""
        if (value is None) == (fields is None):
            raise ValueError("set() takes either value or fields")
        request: Dict[str, Any] = {"command": "set", "id": id}
        if value is not None:
            request["hex"] = bytes(value).hex().upper()
        else:
            request["fields"] = dict(fields or {})
        return Command(request, _value)

    @staticmethod
    def notify(id: str, count: int = 1, central: Optional[str] = None) -> Command[Value]:
        """Sends the current value `count` times, to every subscriber or only to `central`."""
        return Command(_with({"command": "notify", "id": id, "count": count}, central=central), _value)

    @staticmethod
    def fault(
        operation: str,
        id: Optional[str] = None,
        nth: int = 1,
        error: Optional[Union[str, int]] = None,
        delay_ms: Optional[int] = None,
        effect: Optional[str] = None,
    ) -> Command[None]:
        """Arms a one-shot fault on the `nth` `operation` from now."""
        request = _with({"command": "fault", "operation": operation, "nth": nth}, id=id)
        # One effect per fault: the first given of effect, delay and error.
        if effect is not None:
            request["effect"] = effect
        elif delay_ms is not None:
            request["delayMs"] = delay_ms
        elif error is not None:
            request["error"] = error
        return Command(request, _nothing)

    @staticmethod
    def schedules(action: Optional[str] = None, id: Optional[str] = None) -> Command[List[Schedule]]:
        """Lists the schedules, after `action` ("pause" or "resume") on those of `id` (all when None)."""
        return Command(_with({"command": "schedules"}, action=action, id=id), _schedules)

    @staticmethod
    def advertising(on: bool) -> Command[None]:
        """Starts or stops advertising."""
        return Command({"command": "advertising", "action": "start" if on else "stop"}, _nothing)

    @staticmethod
    def centrals() -> Command[List[Central]]:
        """The connected centrals and their subscriptions."""
        return Command({"command": "centrals"}, _centrals)

    @staticmethod
    def disconnect(central: Optional[str] = None) -> Command[List[str]]:
        """Drops the link of every connected central, or of `central` only; the centrals whose link was dropped."""
        return Command(_with({"command": "disconnect"}, central=central),
                       lambda answer: [str(id) for id in answer["disconnected"]])

    @staticmethod
    def disconnects() -> Command[List[Disconnect]]:
        """The latest centrals that disconnected, oldest first."""
        return Command({"command": "centrals"}, _disconnects)

    @staticmethod
    def pairing() -> Command[List[PairingStep]]:
        """The latest pairing steps, oldest first."""
        return Command({"command": "pairing"}, _pairing)

    @staticmethod
    def counters() -> Command[Counters]:
        """Requests, answers and notifications as the peripheral counted them."""
        return Command({"command": "counters"}, lambda answer: _counters(answer["counters"]))

    @staticmethod
    def reset() -> Command[List[str]]:
        """Puts the device back as the profile starts it; the ids whose value changed."""
        return Command({"command": "reset"}, lambda answer: [str(id) for id in answer["changed"]])

    @staticmethod
    def recent_events() -> Command[List[Event]]:
        """The latest events (at most 256), oldest first, as the event log has them."""
        return Command({"command": "events"}, lambda answer: [dict(event) for event in answer["events"]])

    @staticmethod
    def describe() -> Command[Dict[str, Any]]:
        """The profile served, as `blemu show --json` prints it: name, pairing, services, characteristics, fields."""
        return Command({"command": "describe"}, lambda answer: dict(answer["profile"]))

    @staticmethod
    def status() -> Command[Dict[str, Any]]:
        """The device as it runs: state, advertising, adapter, bluetoothd's version, the advertisement's bytes."""
        return Command({"command": "status"}, lambda answer: {k: v for k, v in answer.items() if k != "ok"})

    @staticmethod
    def state(**values: Any) -> Command[Dict[str, Any]]:
        """The device's state variables (``behaviour.state``) by name; keyword arguments set those first."""
        request: Dict[str, Any] = {"command": "state"}
        if values:
            request["set"] = dict(values)
        return Command(request, lambda answer: dict(answer["state"]))

    @staticmethod
    def handle(
        ids: List[str], operations: List[str], deadline_ms: Optional[int] = None,
        fallback: Optional[Union[int, str]] = None,
    ) -> Dict[str, Any]:
        """The request that turns a connection into a handler's: the characteristics' requests come as lines."""
        return _with({"command": "handle", "ids": list(ids), "operations": list(operations)},
                     deadlineMs=deadline_ms, fallback=fallback)

    @staticmethod
    def follow_events() -> Dict[str, Any]:
        """The request that turns a connection into the stream of every event from then on."""
        return {"command": "events", "follow": True}


class Peripheral:
    """A running `blemu run` (or lab peripheral), reached through its control socket; blocking.

    Each call opens the socket, sends one line and reads one line, so a `Peripheral` is cheap, thread-safe and
    survives the peripheral restarting. `timeout` bounds each call in seconds. In asyncio code, use
    `blemu.aio.AsyncPeripheral` (or `.aio()` of this one): the same commands, awaited.
    """

    def __init__(
        self,
        control: str,
        events: Optional[str] = None,
        address: Optional[str] = None,
        timeout: float = 10.0,
    ) -> None:
        self.control = control
        self.event_log = EventLog(events) if events else None
        self.address = address
        self.timeout = timeout
        self.handlers: List[Handler] = []
        """The handlers attached by `on_write` and `on_read`, in order."""

    @classmethod
    def from_lab(cls, index: int = 0) -> "Peripheral":
        """The lab's `index`th peripheral (`blemu lab run --profile ...`), from `BLEMU_LAB_*` in the environment."""
        controls = _listed("BLEMU_LAB_CONTROLS") or _listed("BLEMU_LAB_CONTROL")
        if not controls:
            raise ControlUnavailable("lab", "BLEMU_LAB_CONTROLS is not set: not inside `blemu lab run --profile ...`")
        if index >= len(controls):
            raise ControlUnavailable("lab", f"the lab runs {len(controls)} peripheral(s), not {index + 1}")
        events = _listed("BLEMU_LAB_EVENT_LOGS")
        addresses = _listed("BLEMU_LAB_PERIPHERAL_ADDRESS")
        return cls(
            controls[index],
            events=events[index] if index < len(events) else None,
            address=addresses[index] if index < len(addresses) else None,
        )

    def aio(self) -> "AsyncPeripheral":
        """The same peripheral, with awaitable commands and the live event stream."""
        from .aio import AsyncPeripheral

        return AsyncPeripheral(self.control, address=self.address, timeout=self.timeout)

    def run(self, command: Command[T]) -> T:
        """Sends `command` and returns its response read; raises `ControlError` when it is refused."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(self.timeout)
                connection.connect(self.control)
                connection.sendall(request_line(command.request))
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
        except OSError as error:
            raise ControlUnavailable(command.name, f"{self.control}: {error.strerror or error}") from error
        return command.parse(response(command.name, answer, self.control))

    def request(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        """Sends one request object and returns the response object; raises `ControlError` when it is not ok."""
        return self.run(Command(dict(request), lambda answer: answer))

    def get(self, id: str) -> Value:
        """The current value of characteristic `id`."""
        return self.run(Commands.get(id))

    def set(self, id: str, value: Optional[bytes] = None, *, fields: Optional[Mapping[str, Any]] = None) -> Value:
        """Stores `value` (bytes) or changes the named `fields` of the current value; subscribers are notified.
        A running schedule of `id` writes its fields again at its next tick: `pause_schedules(id)` first to hold."""
        return self.run(Commands.set(id, value, fields))

    def notify(self, id: str, count: int = 1, central: Optional[str] = None) -> Value:
        """Sends the current value to the subscribers `count` times, or only to the subscribed `central`."""
        return self.run(Commands.notify(id, count, central))

    def fault(
        self,
        operation: str,
        id: Optional[str] = None,
        *,
        nth: int = 1,
        error: Optional[Union[str, int]] = None,
        delay_ms: Optional[int] = None,
        effect: Optional[str] = None,
    ) -> None:
        """Arms a one-shot fault on the `nth` `operation` ("read" or "write") from now: an ATT `error` (a name
        such as "unlikely-error", or a code), an answer delayed by `delay_ms`, or an `effect` after answering
        ("disconnect", "stop-advertising")."""
        self.run(Commands.fault(operation, id, nth, error, delay_ms, effect))

    def schedules(self) -> List[Schedule]:
        """The profile's schedules, in declaration order."""
        return self.run(Commands.schedules())

    def pause_schedules(self, id: Optional[str] = None) -> List[Schedule]:
        """Holds the schedules of characteristic `id` (all when None) until `resume_schedules` or `reset`."""
        return self.run(Commands.schedules("pause", id))

    def resume_schedules(self, id: Optional[str] = None) -> List[Schedule]:
        """Lets held schedules run again from now (the first tick one interval later)."""
        return self.run(Commands.schedules("resume", id))

    def advertising(self, on: bool) -> None:
        """Starts or stops advertising."""
        self.run(Commands.advertising(on))

    def centrals(self) -> List[Central]:
        """The connected centrals and their subscriptions."""
        return self.run(Commands.centrals())

    def disconnect(self, central: Optional[str] = None) -> List[str]:
        """Drops the link of every connected central, or of `central` only (an id from `centrals`): the device walking
        out of range, for a test of the app's reconnection. Returns the centrals whose link bluetoothd dropped; each
        then shows in `disconnects` and the events."""
        return self.run(Commands.disconnect(central))

    def disconnects(self) -> List[Disconnect]:
        """The latest centrals that disconnected, oldest first, with bluetoothd's reason where it gave one."""
        return self.run(Commands.disconnects())

    def pairing(self) -> List[PairingStep]:
        """The latest pairing steps, oldest first (a displayed passkey to type on the central)."""
        return self.run(Commands.pairing())

    def counters(self) -> Counters:
        """Requests, answers and notifications as the peripheral counted them."""
        return self.run(Commands.counters())

    def reset(self) -> List[str]:
        """Puts the device back as the profile starts it: values, schedules (held ones released) and faults. Links,
        subscriptions and counters stay; subscribers are not notified. Returns the ids whose value changed."""
        return self.run(Commands.reset())

    def recent_events(self) -> List[Event]:
        """The latest events (at most 256), oldest first, as the event log has them."""
        return self.run(Commands.recent_events())

    def describe(self) -> Dict[str, Any]:
        """The profile served (`blemu show --json`'s document), its values as the profile starts them."""
        return self.run(Commands.describe())

    def status(self) -> Dict[str, Any]:
        """The device as it runs: ``state``, ``advertising``, ``adapter``, ``bluez`` (bluetoothd's version, or None)
        and ``advertisement`` (its bytes and AD structures, as ``blemu adv`` lays them out)."""
        return self.run(Commands.status())

    def state(self, **values: Any) -> Dict[str, Any]:
        """The device's state variables by name (a trainer's ``control``, its ``target-power``). Keyword arguments
        set variables first, checked against their types: ``trainer.state(**{"target-power": 200})``. ``reset()``
        puts every variable back to its initial value."""
        return self.run(Commands.state(**values))

    def on_write(
        self, id: str, *ids: str, deadline_ms: Optional[int] = None, fallback: Optional[Union[int, str]] = None,
    ) -> Callable[[HandlerFunction], Handler]:
        """Decorates a function that answers every write to `id` (and `ids`) from now on, instead of the profile:
        it gets a `Request` and returns None (accept and store), bytes (accept and store those), `PROFILE` (the
        profile answers), or raises `AttError`. A write it does not answer within `deadline_ms` (0.8 of blemu's
        request deadline at most and by default) gets the `fallback`: the profile's own answer, or an ATT error."""
        return self._handler([id, *ids], ["write"], deadline_ms, fallback)

    def on_read(
        self, id: str, *ids: str, deadline_ms: Optional[int] = None, fallback: Optional[Union[int, str]] = None,
    ) -> Callable[[HandlerFunction], Handler]:
        """Decorates a function that answers every read of `id` (and `ids`): it returns the whole value as bytes
        (blemu serves the part from the request's offset), None (the stored value), `PROFILE`, or raises
        `AttError`. `deadline_ms` and `fallback` as for `on_write`."""
        return self._handler([id, *ids], ["read"], deadline_ms, fallback)

    def _handler(
        self, ids: List[str], operations: List[str], deadline_ms: Optional[int], fallback: Optional[Union[int, str]],
    ) -> Callable[[HandlerFunction], Handler]:
        def attach(function: HandlerFunction) -> Handler:
            claim = Commands.handle(ids, operations, deadline_ms, fallback)
            try:
                handler = Handler(self.control, claim, function, timeout=self.timeout)
            except HandlerRefused as refused:
                raise ControlError("handle", refused.reason) from refused
            except OSError as error:
                raise ControlUnavailable("handle", f"{self.control}: {error.strerror or error}") from error
            self.handlers.append(handler)
            return handler

        return attach

    def serve(self) -> None:
        """Blocks while the handlers answer: until every handler's connection ends (the device stopped). For a
        standalone handler script; a test just lets its handlers run beside it."""
        for handler in list(self.handlers):
            handler.wait()

    @contextmanager
    def counting(self) -> Iterator["Counting"]:
        """``with strap.counting() as counted: ...``: then ``counted.delta`` is what the block made the peripheral
        count (requests, answers, notifications), whatever the tests before it did."""
        counted = Counting(self.counters())
        yield counted
        counted.after = self.counters()


class Counting:
    """The counters before a block and, once it ended, after it (`Peripheral.counting`)."""

    def __init__(self, before: Counters) -> None:
        self.before = before
        self.after: Optional[Counters] = None

    @property
    def delta(self) -> Counters:
        """What was counted during the block; only once it has ended."""
        if self.after is None:
            raise RuntimeError("the counting block has not ended yet")
        return self.after - self.before


def _listed(name: str) -> List[str]:
    return [item for item in os.environ.get(name, "").split(",") if item]


def _with(request: Dict[str, Any], **optional: Any) -> Dict[str, Any]:
    """`request` with each of the `optional` members that is not None."""
    request.update((key, value) for key, value in optional.items() if value is not None)
    return request


def _nothing(_: Dict[str, Any]) -> None:
    return None


def _value(answer: Mapping[str, Any]) -> Value:
    return Value(id=answer["id"], bytes=bytes.fromhex(answer["hex"]), fields=dict(answer.get("fields", {})))


def _schedules(answer: Mapping[str, Any]) -> List[Schedule]:
    return [
        Schedule(
            id=item["id"],
            interval_ms=item["intervalMs"],
            paused=item["paused"],
            running=item["running"],
            recorded=item.get("recorded", False),
        )
        for item in answer["schedules"]
    ]


def _centrals(answer: Mapping[str, Any]) -> List[Central]:
    return [
        Central(
            id=item["id"],
            maximum_update_value_length=int(item["maximumUpdateValueLength"]),
            subscriptions=[str(id) for id in item["subscriptions"]],
        )
        for item in answer["centrals"]
    ]


def _disconnects(answer: Mapping[str, Any]) -> List[Disconnect]:
    return [
        Disconnect(central=item["central"], reason=item.get("reason"), message=item.get("message"))
        for item in answer.get("disconnects", [])
    ]


def _pairing(answer: Mapping[str, Any]) -> List[PairingStep]:
    return [
        PairingStep(
            central=item["central"], method=item["method"], accepted=bool(item["accepted"]), passkey=item.get("passkey")
        )
        for item in answer["pairings"]
    ]


def _counters(raw: Mapping[str, Any]) -> Counters:
    numbers = {key: int(value) for key, value in raw.items()}
    return Counters(
        requests=numbers.get("requests", 0),
        answered=numbers.get("answered", 0),
        notifications_queued=numbers.get("notificationsQueued", 0),
        notifications_sent=numbers.get("notificationsSent", 0),
        notifications_dropped=numbers.get("notificationsDropped", 0),
        raw=numbers,
    )
