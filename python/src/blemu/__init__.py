"""Drive a blemu peripheral from Python: its control socket, its event log, and a pytest fixture.

    from blemu import Peripheral

    strap = Peripheral.from_lab()          # inside `blemu lab run`; or Peripheral("/path/control.sock")
    strap.pause_schedules("heart-rate-measurement")
    strap.set("heart-rate-measurement", fields={"bpm": 150})
    assert strap.counters().unanswered == 0

Standard library only. The protocol is docs/control-and-events.md in the blemu repository.
"""

from .control import Centrals, ControlError, ControlUnavailable, Counters, Peripheral, Schedule, Value
from .events import EventLog

__all__ = [
    "Centrals",
    "ControlError",
    "ControlUnavailable",
    "Counters",
    "EventLog",
    "Peripheral",
    "Schedule",
    "Value",
    "__version__",
]

__version__ = "0.4.0"
