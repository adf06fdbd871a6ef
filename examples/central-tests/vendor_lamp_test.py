"""The Lumo lamp (examples/vendor-lamp), its protocol answered by its Python handler, checked as the vendor's app
uses it, over bleak:

    blemu lab run --profile examples/vendor-lamp/lamp.yaml -- \
        ~/.cache/blemu/venv/bin/python examples/central-tests/vendor_lamp_test.py

The test attaches the handler itself (lamp_handler.attach) to the lab peripheral whose profile is the lamp, then
scans with bleak's default adapter for "Lumo Lamp" (no service-UUID filter: bluetoothd 5.87 crashes on UUID-filtered
discovery from the same machine), subscribes to the response characteristic and writes command frames. The expected
frames are built here from the protocol's description (a CRC-8 written again, not imported), so the handler is
judged, not trusted. A line per check; the first failure ends the session.
"""

import asyncio
import os
import sys
import unittest

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "src"))
sys.path.insert(0, os.path.join(HERE, "..", "vendor-lamp"))

from blemu import Peripheral  # noqa: E402
import lamp_handler  # noqa: E402

COMMAND = "7a1b0002-4c55-4d4f-8000-00805f9b34fb"
RESPONSE = "7a1b0003-4c55-4d4f-8000-00805f9b34fb"
LIGHT = "7a1b0004-4c55-4d4f-8000-00805f9b34fb"
NAME = "Lumo Lamp"
SCAN_SECONDS = 30
CONNECT_SECONDS = 30
ANSWER_SECONDS = 5


def crc8(data: bytes) -> int:
    """CRC-8, polynomial 0x07, initial 0, MSB first, as the lamp's description says."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def frame(command: int, payload: bytes = b"") -> bytes:
    body = bytes([len(payload) + 1, command]) + payload
    return b"\x5a" + body + bytes([crc8(body)])


def the_lamp() -> Peripheral:
    """The lab's peripheral serving the lamp's profile, found by the name it describes."""
    index = 0
    while True:
        try:
            device = Peripheral.from_lab(index)
        except Exception as error:  # noqa: BLE001 - past the last one: no lamp in this lab
            raise AssertionError(f"no lab peripheral serves {NAME!r}: {error}") from None
        if device.describe()["name"].startswith(NAME):
            return device
        index += 1


class LampSession(unittest.IsolatedAsyncioTestCase):
    """What the lamp's app does: connect, subscribe, send commands, read the light."""

    async def asyncSetUp(self):
        self.lamp = the_lamp()
        self.handler = lamp_handler.attach(self.lamp)
        self.before = self.lamp.counters()
        device = await BleakScanner.find_device_by_filter(
            lambda device, advertisement: NAME in (advertisement.local_name or "", device.name or ""),
            timeout=SCAN_SECONDS,
        )
        self.assertIsNotNone(device, f"no {NAME!r} advertising within {SCAN_SECONDS} s")
        self.client = BleakClient(device)
        await asyncio.wait_for(self.client.connect(), timeout=CONNECT_SECONDS)
        print(f"\nconnected to {device.name!r} at {device.address}", flush=True)
        self.responses: asyncio.Queue = asyncio.Queue()

    async def asyncTearDown(self):
        await self.client.disconnect()
        self.handler.stop()

    async def check(self, name, body):
        """Runs one check, printing ok or FAIL with why; a failure ends the session."""
        try:
            detail = await body()
        except (AssertionError, BleakError, asyncio.TimeoutError) as error:
            reason = str(error) or type(error).__name__
            print(f"FAIL {name}: {reason}", flush=True)
            raise AssertionError(f"{name}: {reason}") from error
        print(f"ok   {name}" + (f" ({detail})" if detail else ""), flush=True)

    async def exchange(self, written: bytes, expected: bytes):
        """Writes a frame with response and expects exactly `expected` back on the response characteristic."""
        while not self.responses.empty():
            self.responses.get_nowait()
        await asyncio.wait_for(self.client.write_gatt_char(COMMAND, written, response=True), timeout=ANSWER_SECONDS)
        got = await asyncio.wait_for(self.responses.get(), timeout=ANSWER_SECONDS)
        self.assertEqual(got.hex(), expected.hex())
        return got.hex().upper()

    async def test_an_app_session(self):
        async def subscribe():
            await asyncio.wait_for(
                self.client.start_notify(RESPONSE, lambda _, data: self.responses.put_nowait(bytes(data))),
                timeout=ANSWER_SECONDS,
            )

        await self.check("notifications on the response characteristic", subscribe)
        exchanges = [
            ("firmware version", frame(0x10), frame(0x90, b"LUMO-1.4.2")),
            ("power on", frame(0x02, b"\x01"), frame(0x82, b"\x00")),
            ("a level past 100 is refused in the frame", frame(0x04, bytes([150])), frame(0x84, b"\x02")),
            ("colour", frame(0x03, bytes([0x10, 0x20, 0x30])), frame(0x83, b"\x00")),
            ("state", frame(0x01), frame(0x81, bytes([1, 100, 0x10, 0x20, 0x30]))),
            ("a bad CRC is answered with its error frame", b"\x5a\x01\x10\x00", frame(0xFF, b"\x01\x10")),
            ("an unknown command is answered with its error frame", frame(0x7E), frame(0xFF, b"\x02\x7e")),
        ]
        for name, written, expected in exchanges:
            await self.check(name, lambda written=written, expected=expected: self.exchange(written, expected))

        async def not_a_frame():
            try:
                await self.client.write_gatt_char(COMMAND, b"\x01\x02", response=True)
            except BleakError as error:
                self.assertIn("0x80", str(error))
                return str(error)
            raise AssertionError("a write that is not a frame was accepted")

        await self.check("a write that is not a frame gets ATT error 0x80", not_a_frame)

        async def light():
            value = bytes(await self.client.read_gatt_char(LIGHT))
            self.assertEqual(value.hex(), bytes([1, 100, 0x10, 0x20, 0x30]).hex())
            return value.hex().upper()

        await self.check("the light reads as the commands left it", light)

        async def once():
            counted = self.lamp.counters() - self.before
            raw = counted.raw
            self.assertEqual(counted.requests, counted.answered, raw)
            self.assertEqual(raw["handlerRequests"], 8, raw)
            self.assertEqual(raw["handlerAnswered"], 8, raw)
            self.assertEqual(raw["handlerFallbacks"] + raw["handlerRefused"], 0, raw)
            self.assertEqual(self.handler.failures, [])
            return f"{counted.requests} requests, {raw['handlerRequests']} answered by the handler"

        await self.check("every request answered once, every command by the handler", once)


if __name__ == "__main__":
    unittest.main(verbosity=2)
