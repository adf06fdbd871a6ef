"""Drive a blemu peripheral from Python: its control socket, its events, and pytest fixtures.

    from blemu import Peripheral

    strap = Peripheral.from_lab()          # inside `blemu lab run`; or Peripheral("/path/control.sock")
    strap.pause_schedules("heart-rate-measurement")
    strap.set("heart-rate-measurement", fields={"bpm": 150})
    assert strap.counters().unanswered == 0

In asyncio code (bleak's), `blemu.aio.AsyncPeripheral` has the same commands, awaited, and follows the events as
they happen. `Peripheral.on_write` and `on_read` attach Python functions that answer a characteristic's requests
(`blemu.handlers`). Standard library only. The protocol is docs/control-and-events.md in the blemu repository.
"""

from .aio import AsyncPeripheral, EventStream, EventTimeout
from .control import (
    Central,
    ControlError,
    ControlUnavailable,
    Counters,
    Counting,
    Disconnect,
    PairingStep,
    Peripheral,
    Schedule,
    Value,
)
from .events import Event, EventLog
from .handlers import PROFILE, AttError, Handler, Request

__all__ = [
    "PROFILE",
    "AsyncPeripheral",
    "AttError",
    "Central",
    "ControlError",
    "ControlUnavailable",
    "Counters",
    "Counting",
    "Disconnect",
    "Event",
    "EventLog",
    "EventStream",
    "EventTimeout",
    "Handler",
    "PairingStep",
    "Peripheral",
    "Request",
    "Schedule",
    "Value",
    "__version__",
]

__version__ = "0.4.0"
