"""Handlers: Python functions that answer a characteristic's reads or writes for the profile.

    device = Peripheral("/tmp/blemu.sock")

    @device.on_write("rx")
    def rx(request):
        if request.value[:1] != b"\\x01":
            raise AttError(0x80)            # the central gets Application Error 0x80
        device.set("tx", b"\\x81\\x00")     # notifies the subscribers, as any `set`
        # returning None accepts the write (and stores the value)

Each decorated function gets its own control connection (`{"command":"handle"}`, docs/control-and-events.md,
"Handlers") and a thread that calls it once per request, in order. Every request is answered once whatever the
function does: one that raises something other than `AttError` answers Unlikely Error (0x0E) and the exception is
kept in the handler's `failures`; one too slow for its deadline, or whose process is gone, gets the fallback (the
profile's own behaviour by default). Standard library only.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Union


class AttError(Exception):
    """Raised by a handler to answer its request with an ATT error: a code (0x80) or a name ("value-not-allowed")."""

    def __init__(self, error: Union[int, str]) -> None:
        super().__init__(f"ATT error {error}")
        self.error = error


class HandlerRefused(Exception):
    """blemu refused the claim: an unknown characteristic, one another handler answers, a deadline too long."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"blemu handle: {reason}")
        self.reason = reason


PROFILE = object()
"""Returned by a handler to let the profile answer this request as if no handler were attached (its rules, its
protocols, its stored value)."""


@dataclass(frozen=True)
class Request:
    """One read or write handed to a handler."""

    number: int
    """blemu's number for the request, unique while it runs."""
    operation: str
    """"read" or "write"."""
    id: str
    """The characteristic's id in the profile."""
    central: str
    """Which central asked (bluetoothd's device path)."""
    mtu: int
    """The link's ATT MTU: a value longer than ``mtu - 3`` takes a long read."""
    value: bytes = b""
    """What was written: the whole value, after any offsets. Empty for a read."""
    offset: int = 0
    """Where a read starts. Answer with the whole value: blemu serves the part from the offset."""
    without_response: bool = False
    """A Write Command: the answer decides what is stored, but the central hears nothing."""
    after: List[Callable[[], None]] = field(default_factory=list, compare=False, repr=False)

    def then(self, action: Callable[[], None]) -> None:
        """Runs `action` once the answer has gone to blemu: a response notified after the write is answered, as a
        device does. The central usually sees the Write Response first; bluetoothd does not promise an order between
        the two (docs/bluez.md, "Notifications")."""
        self.after.append(action)

    @classmethod
    def parse(cls, line: Mapping[str, Any]) -> "Request":
        """The request in one of blemu's request lines."""
        return cls(
            number=int(line["request"]),
            operation=str(line["operation"]),
            id=str(line["id"]),
            central=str(line.get("central", "")),
            mtu=int(line.get("mtu", 23)),
            value=bytes.fromhex(line.get("hex", "")),
            offset=int(line.get("offset", 0)),
            without_response=bool(line.get("withoutResponse", False)),
        )


HandlerFunction = Callable[[Request], Any]


def answer_line(request: Request, outcome: Any) -> Dict[str, Any]:
    """The answer for what a handler returned: None (success), bytes (a read's value, or the value a write keeps),
    `PROFILE`, or an `AttError` raised."""
    answer: Dict[str, Any] = {"answer": request.number}
    if isinstance(outcome, AttError):
        answer["error"] = outcome.error
    elif outcome is PROFILE:
        answer["profile"] = True
    elif isinstance(outcome, (bytes, bytearray, memoryview)):
        answer["hex"] = bytes(outcome).hex().upper()
    elif outcome is not None:
        raise TypeError(f"a handler returns None, bytes or PROFILE (or raises AttError), not {outcome!r}")
    return answer


class Handler:
    """One function answering requests over its own connection, on its own thread, until `stop()` or the device
    stops. ``requests`` counts what it was asked; ``failures`` keeps what it raised besides `AttError` (each such
    request was answered with Unlikely Error 0x0E, so the central is not left waiting)."""

    def __init__(self, control: str, claim: Mapping[str, Any], function: HandlerFunction, timeout: float = 10.0) -> None:
        self.function = function
        self.requests = 0
        self.failures: List[BaseException] = []
        self._timeout = timeout
        self._stopping = False
        ids = list(claim.get("ids", []))
        self._connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._connection.settimeout(timeout)
        self._connection.connect(control)
        self._connection.sendall((json.dumps(claim) + "\n").encode())
        self._reader = self._connection.makefile("rb")
        # The claim's answer before returning: once a decorator returns, its requests come to it.
        first = self._reader.readline()
        self.claim: Dict[str, Any] = json.loads(first) if first else {"ok": False, "error": "closed"}
        if not self.claim.get("ok"):
            self._connection.close()
            raise HandlerRefused(str(self.claim.get("error", "refused")))
        self._connection.settimeout(None)
        self._thread = threading.Thread(target=self._serve, name=f"blemu handler {','.join(ids)}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # Whatever ends this thread closes the connection, so blemu gives the fallback at once rather than at each
        # request's deadline.
        try:
            for raw in self._reader:
                line = json.loads(raw)
                if "request" not in line:
                    continue  # blemu telling why an answer was refused: the request already had its one answer
                if self._stopping:
                    continue  # blemu answers it with the fallback once it sees the connection end
                request = Request.parse(line)
                self.requests += 1
                if not self._answer(request):
                    if self._stopping:
                        continue  # `stop()` closed this side first: read on to blemu's end, after the claim's release
                    return
        except (OSError, ValueError):
            return
        finally:
            try:
                self._connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _answer(self, request: Request) -> bool:
        """Calls the function and sends its answer, then the actions it left; False when the connection is gone."""
        try:
            outcome = self.function(request)
        except AttError as error:
            outcome = error
        except BaseException as error:  # noqa: BLE001 - SystemExit too: kept for the test, the central answered
            self.failures.append(error)
            outcome = AttError("unlikely-error")
        try:
            text = json.dumps(answer_line(request, outcome))
        except (TypeError, ValueError) as error:
            self.failures.append(error)
            text = json.dumps(answer_line(request, AttError("unlikely-error")))
        try:
            self._connection.sendall((text + "\n").encode())
        except OSError:
            return False
        for action in request.after:
            try:
                action()
            except BaseException as error:  # noqa: BLE001 - kept for the test; the request had its answer
                self.failures.append(error)
        return True

    def stop(self) -> None:
        """Closes the connection: requests from now on get the profile's own answers (or the fallback). Returns once
        blemu has let go of the claim, so a handler attached next for the same characteristic is accepted."""
        self._stopping = True
        try:
            # Only this side's end: blemu reads it, releases the claim, then closes its own side, which is what
            # ends the reading thread (within the timeout; then this side's end too).
            self._connection.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self._thread.join(self._timeout)
        if self._thread.is_alive():
            try:
                self._connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._thread.join()
        self._connection.close()

    def wait(self) -> None:
        """Blocks until the connection ends: the device stopped, or `stop()` was called elsewhere."""
        self._thread.join()

    def __enter__(self) -> "Handler":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
