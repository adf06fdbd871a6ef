"""The asyncio client: the control protocol's commands awaited, and events as they happen.

    from blemu.aio import AsyncPeripheral

    strap = AsyncPeripheral.from_lab()
    async with strap.expect("subscribed", characteristic="heart-rate-measurement"):
        await client.start_notify(HEART_RATE_MEASUREMENT, on_measurement)   # bleak, in the same event loop
    await strap.set("battery-level", fields={"percent": 20})

Events come from the control socket's stream (`{"command":"events","follow":true}`), pushed as the peripheral
records them, never by polling a file. Each command opens its own connection, so an `AsyncPeripheral` is cheap and
can be shared by tasks.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar, Union

from .control import (
    Central,
    Command,
    Commands,
    ControlUnavailable,
    Counters,
    Counting,
    Disconnect,
    PairingStep,
    Peripheral,
    Schedule,
    Value,
    request_line,
    response,
)
from .events import Event

T = TypeVar("T")

LINE_LIMIT = 1 << 22
"""The longest line read: `events` answers up to 256 events in one line."""


class EventTimeout(TimeoutError):
    """No event matched within the time given: the message says what was awaited and what came instead."""


def matches(event: Event, type: Optional[str], where: Optional[Callable[[Event], bool]], fields: Mapping[str, Any]) -> bool:
    """Whether `event` has `type` (any when None), every one of `fields` with the value given, and passes `where`."""
    if type is not None and event.get("type") != type:
        return False
    if any(event.get(key) != value for key, value in fields.items()):
        return False
    return where is None or where(event)


def describe(type: Optional[str], fields: Mapping[str, Any]) -> str:
    """What a wait looks for, as a person reads it: ``subscribed (characteristic=temperature)``."""
    wanted = ", ".join(f"{key}={value}" for key, value in fields.items())
    return f"{type or 'any event'}" + (f" ({wanted})" if wanted else "")


class EventStream:
    """Every event the peripheral records from the moment the stream opened, in order (`AsyncPeripheral.events`).

    ``async for event in stream`` yields them as they come; `wait_for` skips to the first that matches. A stream that
    fell more than 4,096 events behind gets a ``lines-dropped`` event saying how many it lost.
    """

    def __init__(self, control: str, timeout: float) -> None:
        self.control = control
        self.timeout = timeout
        self._connection: Optional[Tuple[asyncio.StreamReader, asyncio.StreamWriter]] = None

    async def open(self) -> "EventStream":
        """Connects and asks for the stream; returns once the peripheral follows (events after this are seen)."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(self.control, limit=LINE_LIMIT), self.timeout
            )
        except (OSError, asyncio.TimeoutError) as error:
            reason = getattr(error, "strerror", None) or str(error) or "no connection in time"
            raise ControlUnavailable("events", f"{self.control}: {reason}") from error
        writer.write(request_line(Commands.follow_events()))
        await writer.drain()
        try:
            first = await asyncio.wait_for(reader.readline(), self.timeout)
        except asyncio.TimeoutError as error:
            writer.close()
            raise ControlUnavailable("events", f"{self.control}: no answer within {self.timeout} s") from error
        try:
            response("events", first, self.control)
        except Exception:
            writer.close()
            raise
        self._connection = (reader, writer)
        return self

    async def close(self) -> None:
        """Ends the stream; the peripheral stops following."""
        if self._connection is not None:
            _, writer = self._connection
            self._connection = None
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    async def __aenter__(self) -> "EventStream":
        return await self.open()

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    def __aiter__(self) -> "EventStream":
        return self

    async def __anext__(self) -> Event:
        event = await self.next()
        if event is None:
            raise StopAsyncIteration
        return event

    async def next(self, timeout: Optional[float] = None) -> Optional[Event]:
        """The next event, waiting at most `timeout` seconds (for ever when None); None when the peripheral stopped.
        Raises `EventTimeout` when the time passes."""
        if self._connection is None:
            raise RuntimeError("the event stream is not open (use `async with peripheral.events() as stream`)")
        reader, _ = self._connection
        try:
            line = await asyncio.wait_for(reader.readline(), timeout)
        except asyncio.TimeoutError as error:
            raise EventTimeout(f"no event within {timeout} s") from error
        if not line:
            return None
        event: Event = json.loads(line)
        return event

    async def wait_for(
        self,
        type: Optional[str] = None,
        *,
        timeout: float = 10.0,
        where: Optional[Callable[[Event], bool]] = None,
        **fields: Any,
    ) -> Event:
        """The first event from here on of `type` (any when None) whose `fields` have the values given
        (``characteristic="temperature"``, ``central=...``, ``result="success"``) and that passes `where`. The
        events before it are consumed. Raises `EventTimeout` after `timeout` seconds, naming the events that came."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        seen: List[str] = []
        while True:
            remaining = deadline - loop.time()
            try:
                event = await self.next(timeout=max(remaining, 0))
            except EventTimeout:
                event = None
                remaining = 0
            if event is None:
                came = ", ".join(seen[-8:]) or "none"
                ended = "" if remaining <= 0 else " (the peripheral closed the stream)"
                raise EventTimeout(f"no {describe(type, fields)} within {timeout} s{ended}; events seen: {came}")
            if matches(event, type, where, fields):
                return event
            seen.append(str(event.get("type")))


class Expectation:
    """An event awaited around a block (`AsyncPeripheral.expect`): `event` once the block has ended."""

    def __init__(self) -> None:
        self.found: Optional[Event] = None

    @property
    def event(self) -> Event:
        """The first event that matched; known once the `expect` block has ended."""
        if self.found is None:
            raise RuntimeError("the awaited event is known once the `expect` block has ended")
        return self.found


class AsyncPeripheral:
    """A running `blemu run` (or lab peripheral), reached through its control socket from asyncio code.

    The commands are `Peripheral`'s, awaited; `events`, `wait_for` and `expect` follow what the peripheral records as
    it happens. `timeout` bounds each command, in seconds.
    """

    def __init__(self, control: str, address: Optional[str] = None, timeout: float = 10.0) -> None:
        self.control = control
        self.address = address
        self.timeout = timeout

    @classmethod
    def from_lab(cls, index: int = 0) -> "AsyncPeripheral":
        """The lab's `index`th peripheral (`blemu lab run --profile ...`), from `BLEMU_LAB_*` in the environment."""
        return Peripheral.from_lab(index).aio()

    async def run(self, command: Command[T]) -> T:
        """Sends `command` and returns its response read; raises `ControlError` when it is refused."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(self.control, limit=LINE_LIMIT), self.timeout
            )
        except (OSError, asyncio.TimeoutError) as error:
            reason = getattr(error, "strerror", None) or str(error) or "no connection in time"
            raise ControlUnavailable(command.name, f"{self.control}: {reason}") from error
        try:
            writer.write(request_line(command.request))
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), self.timeout)
        except (OSError, asyncio.TimeoutError) as error:
            reason = getattr(error, "strerror", None) or str(error) or "no answer in time"
            raise ControlUnavailable(command.name, f"{self.control}: {reason}") from error
        finally:
            writer.close()
        return command.parse(response(command.name, line, self.control))

    async def request(self, request: Mapping[str, Any]) -> Dict[str, Any]:
        """Sends one request object and returns the response object; raises `ControlError` when it is not ok."""
        return await self.run(Command(dict(request), lambda answer: answer))

    async def get(self, id: str) -> Value:
        """The current value of characteristic `id`."""
        return await self.run(Commands.get(id))

    async def set(
        self, id: str, value: Optional[bytes] = None, *, fields: Optional[Mapping[str, Any]] = None
    ) -> Value:
        """Stores `value` (bytes) or changes the named `fields` of the current value; subscribers are notified."""
        return await self.run(Commands.set(id, value, fields))

    async def notify(self, id: str, count: int = 1, central: Optional[str] = None) -> Value:
        """Sends the current value to the subscribers `count` times, or only to the subscribed `central`."""
        return await self.run(Commands.notify(id, count, central))

    async def fault(
        self,
        operation: str,
        id: Optional[str] = None,
        *,
        nth: int = 1,
        error: Optional[Union[str, int]] = None,
        delay_ms: Optional[int] = None,
        effect: Optional[str] = None,
    ) -> None:
        """Arms a one-shot fault on the `nth` `operation` ("read" or "write") from now (see `Peripheral.fault`)."""
        await self.run(Commands.fault(operation, id, nth, error, delay_ms, effect))

    async def schedules(self) -> List[Schedule]:
        """The profile's schedules, in declaration order."""
        return await self.run(Commands.schedules())

    async def pause_schedules(self, id: Optional[str] = None) -> List[Schedule]:
        """Holds the schedules of characteristic `id` (all when None) until `resume_schedules` or `reset`."""
        return await self.run(Commands.schedules("pause", id))

    async def resume_schedules(self, id: Optional[str] = None) -> List[Schedule]:
        """Lets held schedules run again from now (the first tick one interval later)."""
        return await self.run(Commands.schedules("resume", id))

    async def advertising(self, on: bool) -> None:
        """Starts or stops advertising."""
        await self.run(Commands.advertising(on))

    async def centrals(self) -> List[Central]:
        """The connected centrals and their subscriptions."""
        return await self.run(Commands.centrals())

    async def disconnect(self, central: Optional[str] = None) -> List[str]:
        """Drops the link of every connected central, or of `central` only (see `Peripheral.disconnect`)."""
        return await self.run(Commands.disconnect(central))

    async def disconnects(self) -> List[Disconnect]:
        """The latest centrals that disconnected, oldest first, with bluetoothd's reason where it gave one."""
        return await self.run(Commands.disconnects())

    async def pairing(self) -> List[PairingStep]:
        """The latest pairing steps, oldest first (a displayed passkey to type on the central)."""
        return await self.run(Commands.pairing())

    async def counters(self) -> Counters:
        """Requests, answers and notifications as the peripheral counted them."""
        return await self.run(Commands.counters())

    async def reset(self) -> List[str]:
        """Puts the device back as the profile starts it (see `Peripheral.reset`); the ids whose value changed."""
        return await self.run(Commands.reset())

    async def recent_events(self) -> List[Event]:
        """The latest events (at most 256), oldest first, as the event log has them."""
        return await self.run(Commands.recent_events())

    async def describe(self) -> Dict[str, Any]:
        """The profile served (`blemu show --json`'s document), its values as the profile starts them."""
        return await self.run(Commands.describe())

    async def status(self) -> Dict[str, Any]:
        """The device as it runs (see `Peripheral.status`)."""
        return await self.run(Commands.status())

    def events(self) -> EventStream:
        """``async with strap.events() as stream``: every event from the moment it opens, as it happens."""
        return EventStream(self.control, self.timeout)

    async def wait_for(
        self,
        type: Optional[str] = None,
        *,
        timeout: float = 10.0,
        where: Optional[Callable[[Event], bool]] = None,
        **fields: Any,
    ) -> Event:
        """The first event recorded from now on that matches (see `EventStream.wait_for`). Something that already
        happened is not seen: to catch what an action causes, open the wait before it, with `expect`."""
        async with self.events() as stream:
            return await stream.wait_for(type, timeout=timeout, where=where, **fields)

    @asynccontextmanager
    async def expect(
        self,
        type: Optional[str] = None,
        *,
        timeout: float = 10.0,
        where: Optional[Callable[[Event], bool]] = None,
        **fields: Any,
    ) -> AsyncIterator[Expectation]:
        """``async with strap.expect("request", characteristic="alarm-threshold") as seen: <the action>``: the stream
        opens before the block, so an event the block causes cannot be missed; leaving the block waits for the first
        match (`seen.event`), raising `EventTimeout` after `timeout` seconds."""
        expectation = Expectation()
        async with self.events() as stream:
            yield expectation
            expectation.found = await stream.wait_for(type, timeout=timeout, where=where, **fields)

    @asynccontextmanager
    async def counting(self) -> AsyncIterator[Counting]:
        """``async with strap.counting() as counted: ...``: then ``counted.delta`` is what the block made the
        peripheral count."""
        counted = Counting(await self.counters())
        yield counted
        counted.after = await self.counters()
