"""The event log: one JSON object per line, appended as things happen (docs/control-and-events.md)."""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Dict, Iterator, Optional

Event = Dict[str, Any]


class EventLog:
    """Reads a peripheral's event log file (`blemu run --events FILE`, or `events-hci0.jsonl` in the lab's results)
    from a position. For a file there is nothing to subscribe to, so `wait_for` looks again every `poll` seconds; a
    live peripheral's events come pushed instead, from its control socket (`Peripheral.events`, `wait_for`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.position = 0

    def skip_to_end(self) -> None:
        """Starts reading after what is in the log now: only later events are returned."""
        try:
            with open(self.path, "rb") as log:
                self.position = log.seek(0, 2)
        except FileNotFoundError:
            self.position = 0

    def read(self) -> Iterator[Event]:
        """The whole lines appended since the last read, without waiting."""
        try:
            with open(self.path, "rb") as log:
                log.seek(self.position)
                data = log.read()
        except FileNotFoundError:
            return
        start = self.position
        offset = 0
        for line in data.split(b"\n")[:-1]:  # the part after the last newline is a line still being written
            offset += len(line) + 1
            self.position = start + offset
            if line.strip():
                yield json.loads(line)

    def wait_for(
        self, predicate: Callable[[Event], bool], timeout: float = 10.0, poll: float = 0.05
    ) -> Optional[Event]:
        """The first event from the current position on for which `predicate` is true, or None after `timeout`
        seconds; it and the events before it are consumed, later ones are left for the next call."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.read():
                if predicate(event):
                    return event
            if time.monotonic() >= deadline:
                return None
            time.sleep(poll)

    def wait_for_disconnect(self, central: Optional[str] = None, timeout: float = 10.0) -> Optional[Event]:
        """The next `disconnected` event (of `central` when given), or None after `timeout` seconds. Where
        bluetoothd says why (5.83 and later) it carries `reason` (Remote, Local, Timeout, Authentication, Suspend,
        Unknown) and `message`; earlier releases say nothing and the event has neither."""
        return self.wait_for(
            lambda event: event.get("type") == "disconnected" and central in (None, event.get("central")),
            timeout=timeout,
        )
