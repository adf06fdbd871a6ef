"""The control-socket client: one JSON request line, one JSON response line (docs/control-and-events.md)."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from .events import EventLog

Centrals = List[Dict[str, Any]]
"""`centrals()`: each connected central's `id`, `maximumUpdateValueLength` and `subscriptions`."""


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
    """What the peripheral counted (docs/control-and-events.md, `counters`)."""

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


class Peripheral:
    """A running `blemu run` (or lab peripheral), reached through its control socket.

    Each call opens the socket, sends one line and reads one line, so a `Peripheral` is cheap, thread-safe and
    survives the peripheral restarting. `timeout` bounds each call in seconds.
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

    def request(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        """Sends one request object and returns the response; raises `ControlError` when it is not ok."""
        command = str(request.get("command", "?"))
        line = (json.dumps(dict(request), separators=(",", ":")) + "\n").encode()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.settimeout(self.timeout)
                connection.connect(self.control)
                connection.sendall(line)
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = connection.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
        except OSError as error:
            raise ControlUnavailable(command, f"{self.control}: {error.strerror or error}") from error
        if not answer.endswith(b"\n"):
            raise ControlUnavailable(command, f"{self.control} closed without answering")
        response = json.loads(answer)
        if not response.get("ok"):
            raise ControlError(command, str(response.get("error", "refused")))
        return response

    def get(self, id: str) -> Value:
        """The current value of characteristic `id`."""
        return _value(self.request({"command": "get", "id": id}))

    def set(self, id: str, value: Optional[bytes] = None, *, fields: Optional[Mapping[str, Any]] = None) -> Value:
        """Stores `value` (bytes) or changes the named `fields` of the current value; subscribers are notified.
        A running schedule of `id` writes its fields again at its next tick: `pause_schedules(id)` first to hold."""
        if (value is None) == (fields is None):
            raise ValueError("set() takes either value or fields")
        request: Dict[str, Any] = {"command": "set", "id": id}
        if value is not None:
            request["hex"] = bytes(value).hex().upper()
        else:
            request["fields"] = dict(fields or {})
        return _value(self.request(request))

    def notify(self, id: str, count: int = 1, central: Optional[str] = None) -> Value:
        """Sends the current value to the subscribers `count` times, or only to the subscribed `central`."""
        request: Dict[str, Any] = {"command": "notify", "id": id, "count": count}
        if central is not None:
            request["central"] = central
        return _value(self.request(request))

    def fault(
        self,
        operation: str,
        id: Optional[str] = None,
        *,
        nth: int = 1,
        error: Optional[Any] = None,
        delay_ms: Optional[int] = None,
        effect: Optional[str] = None,
    ) -> None:
        """Arms a one-shot fault on the `nth` `operation` ("read" or "write") from now: an ATT `error` (a name
        such as "unlikely-error", or a code), an answer delayed by `delay_ms`, or an `effect` after answering
        ("disconnect", "stop-advertising")."""
        request: Dict[str, Any] = {"command": "fault", "operation": operation, "nth": nth}
        if id is not None:
            request["id"] = id
        if effect is not None:
            request["effect"] = effect
        elif delay_ms is not None:
            request["delayMs"] = delay_ms
        elif error is not None:
            request["error"] = error
        self.request(request)

    def schedules(self) -> List[Schedule]:
        """The profile's schedules, in declaration order."""
        return _schedules(self.request({"command": "schedules"}))

    def pause_schedules(self, id: Optional[str] = None) -> List[Schedule]:
        """Holds the schedules of characteristic `id` (all when None) until `resume_schedules`."""
        return _schedules(self.request(_with_id({"command": "schedules", "action": "pause"}, id)))

    def resume_schedules(self, id: Optional[str] = None) -> List[Schedule]:
        """Lets held schedules run again from now (the first tick one interval later)."""
        return _schedules(self.request(_with_id({"command": "schedules", "action": "resume"}, id)))

    def advertising(self, on: bool) -> None:
        """Starts or stops advertising."""
        self.request({"command": "advertising", "action": "start" if on else "stop"})

    def centrals(self) -> Centrals:
        """The connected centrals and their subscriptions."""
        return list(self.request({"command": "centrals"})["centrals"])

    def disconnects(self) -> List[Dict[str, Any]]:
        """The latest centrals that disconnected, oldest first: `central`, and `reason` (Remote, Local, Timeout,
        Authentication, Suspend, Unknown) and `message` where bluetoothd said why (5.83 and later)."""
        return list(self.request({"command": "centrals"}).get("disconnects", []))

    def pairing(self) -> List[Dict[str, Any]]:
        """The latest pairing steps, oldest first: `central`, `method` ("display-passkey": type `passkey` on the
        central), `passkey` (six digits), `accepted`."""
        return list(self.request({"command": "pairing"})["pairings"])

    def counters(self) -> Counters:
        """Requests, answers and notifications as the peripheral counted them."""
        raw = {key: int(value) for key, value in self.request({"command": "counters"})["counters"].items()}
        return Counters(
            requests=raw.get("requests", 0),
            answered=raw.get("answered", 0),
            notifications_queued=raw.get("notificationsQueued", 0),
            notifications_sent=raw.get("notificationsSent", 0),
            notifications_dropped=raw.get("notificationsDropped", 0),
            raw=raw,
        )


def _listed(name: str) -> List[str]:
    return [item for item in os.environ.get(name, "").split(",") if item]


def _with_id(request: Dict[str, Any], id: Optional[str]) -> Dict[str, Any]:
    if id is not None:
        request["id"] = id
    return request


def _value(response: Mapping[str, Any]) -> Value:
    return Value(id=response["id"], bytes=bytes.fromhex(response["hex"]), fields=dict(response.get("fields", {})))


def _schedules(response: Mapping[str, Any]) -> List[Schedule]:
    return [
        Schedule(
            id=item["id"],
            interval_ms=item["intervalMs"],
            paused=item["paused"],
            running=item["running"],
            recorded=item.get("recorded", False),
        )
        for item in response["schedules"]
    ]
