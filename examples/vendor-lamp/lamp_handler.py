"""The Lumo lamp's command protocol, answered in Python for examples/vendor-lamp/lamp.yaml.

    blemu run examples/vendor-lamp/lamp.yaml --handler 'python3 examples/vendor-lamp/lamp_handler.py'

A frame is ``5A LEN CMD PAYLOAD... CRC``: LEN counts CMD and PAYLOAD, CRC is CRC-8 (polynomial 0x07, initial 0)
over LEN, CMD and PAYLOAD. Each command written to ``command`` is answered on ``response`` with a frame whose CMD
is the request's with the high bit set (0x01 -> 0x81), then the lamp's state is updated on ``light``:

    01 GET_STATE                -> 81 ON BRIGHTNESS R G B
    02 SET_POWER   ON (0 or 1)  -> 82 STATUS
    03 SET_COLOR   R G B        -> 83 STATUS
    04 SET_LEVEL   0..100       -> 84 STATUS   (02: out of range)
    10 GET_INFO                 -> 90 "LUMO-1.4.2"
    a bad CRC                   -> FF 01 CMD
    an unknown command          -> FF 02 CMD
    a wrong length for CMD      -> FF 03 CMD

A frame shorter than four bytes or not starting with 5A is refused at the ATT level (0x80, the vendor's "not a
frame"). The socket is ``BLEMU_CONTROL`` (``blemu run --handler`` sets it), or the first argument.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))

from blemu import AttError, Handler, Peripheral, Request  # noqa: E402

SYNC = 0x5A
FIRMWARE = b"LUMO-1.4.2"
LENGTHS = {0x01: 0, 0x02: 1, 0x03: 3, 0x04: 1, 0x10: 0}


def crc8(data: bytes) -> int:
    """CRC-8, polynomial x^8 + x^2 + x + 1 (0x07), initial value 0, no reflection."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def frame(command: int, payload: bytes = b"") -> bytes:
    """A frame for `command` with `payload`, its length and CRC filled in."""
    body = bytes([len(payload) + 1, command]) + payload
    return bytes([SYNC]) + body + bytes([crc8(body)])


class Lamp:
    """The lamp's state and its answers: pure, so a test can check it without a socket."""

    def __init__(self) -> None:
        self.on = False
        self.brightness = 100
        self.color = (255, 255, 255)

    def state(self) -> bytes:
        """What the ``light`` characteristic holds: on, brightness, red, green, blue."""
        return bytes([int(self.on), self.brightness, *self.color])

    def answer(self, written: bytes) -> bytes:
        """The response frame for a written frame (already checked to be one)."""
        length, command, payload, crc = written[1], written[2], written[3:-1], written[-1]
        if crc8(written[1:-1]) != crc or length != len(payload) + 1:
            return frame(0xFF, bytes([0x01, command]))
        if command not in LENGTHS:
            return frame(0xFF, bytes([0x02, command]))
        if len(payload) != LENGTHS[command]:
            return frame(0xFF, bytes([0x03, command]))
        status = 0x00
        if command == 0x01:
            return frame(0x81, self.state())
        if command == 0x10:
            return frame(0x90, FIRMWARE)
        if command == 0x02:
            self.on = payload[0] != 0
        elif command == 0x03:
            self.color = (payload[0], payload[1], payload[2])
        elif command == 0x04:
            if payload[0] > 100:
                status = 0x02
            else:
                self.brightness = payload[0]
        return frame(command | 0x80, bytes([status]))


def attach(device: Peripheral) -> Handler:
    """Answers the lamp's `command` writes on `device` from now on (a test attaches it so, beside its central)."""
    lamp = Lamp()

    @device.on_write("command")
    def command(request: Request) -> None:
        written = request.value
        if len(written) < 4 or written[0] != SYNC:
            raise AttError(0x80)
        response = lamp.answer(written)
        state = lamp.state()

        # Once the write is answered, as the lamp's firmware does: the response frame, then the new state.
        def notify() -> None:
            device.set("response", response)
            device.set("light", state)

        request.then(notify)

    return command


def main() -> None:
    control = os.environ.get("BLEMU_CONTROL") or sys.argv[1]
    device = Peripheral(control)
    attach(device)
    print(f"lamp handler (pid {os.getpid()}): answering writes to `command` on {control}", flush=True)
    device.serve()


if __name__ == "__main__":
    main()
