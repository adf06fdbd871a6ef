"""A Nordic UART Service (NUS) loopback, checked as a serial-terminal app uses it, over bleak:

    blemu lab run --profile profiles/nordic-uart.yaml -- \
        ~/.cache/blemu/venv/bin/python examples/central-tests/nordic_uart_echo_test.py

It scans with bleak's default adapter for the board's name (env BLEMU_UART_NAME, default "blemu UART") or the NUS
service UUID in its advertisement (no service-UUID filter: bluetoothd 5.87 crashes on UUID-filtered discovery from
the same machine), subscribes to TX (6E400003), and writes RX (6E400002) as nRF Connect's UART console does: a line
with a Write Request, a burst of commands without response, and a write as long as a phone's link carries. Each value
must come back on TX whole and in order. One connection; a line per check; the first failure ends the session.
"""

import asyncio
import os
import unittest

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError

NUS = "6e400001-b5a3-f393-e0a9-e50e24dcca9e"
RX = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
TX = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"
NAME = os.environ.get("BLEMU_UART_NAME", "blemu UART")
SCAN_SECONDS = 30
CONNECT_SECONDS = 30
ECHO_SECONDS = 5


class UartLoopback(unittest.IsolatedAsyncioTestCase):
    """What a UART console needs from a loopback board, in the order it does it."""

    async def asyncSetUp(self):
        device = await BleakScanner.find_device_by_filter(
            lambda device, advertisement: NAME in (advertisement.local_name, device.name)
            or NUS in advertisement.service_uuids,
            timeout=SCAN_SECONDS,
        )
        self.assertIsNotNone(device, f"no {NAME!r} nor any Nordic UART advertising within {SCAN_SECONDS} s")
        self.client = BleakClient(device)
        await asyncio.wait_for(self.client.connect(), timeout=CONNECT_SECONDS)
        print(f"\nconnected to {device.name!r} at {device.address}", flush=True)
        self.echoes: asyncio.Queue = asyncio.Queue()

    async def asyncTearDown(self):
        await self.client.disconnect()

    async def check(self, name, body):
        """Runs one check, printing ok or FAIL with why; a failure ends the session."""
        try:
            detail = await body()
        except (AssertionError, BleakError, asyncio.TimeoutError) as error:
            reason = str(error) or type(error).__name__
            print(f"FAIL {name}: {reason}", flush=True)
            raise AssertionError(f"{name}: {reason}") from error
        print(f"ok   {name}" + (f" ({detail})" if detail else ""), flush=True)

    async def echo(self, values, response: bool):
        """Writes each value to RX and expects each back on TX, in order, nothing else."""
        while not self.echoes.empty():
            self.echoes.get_nowait()
        for value in values:
            await asyncio.wait_for(self.client.write_gatt_char(RX, value, response=response), timeout=ECHO_SECONDS)
        for index, value in enumerate(values):
            try:
                got = await asyncio.wait_for(self.echoes.get(), timeout=ECHO_SECONDS)
            except asyncio.TimeoutError:
                raise AssertionError(f"echo {index + 1} of {len(values)} did not come within {ECHO_SECONDS} s") from None
            self.assertEqual(got, value, f"echo {index + 1} of {len(values)}")
        return f"{len(values)} echoed, {sum(len(v) for v in values)} bytes"

    async def test_a_console_session(self):
        async def subscribe():
            await asyncio.wait_for(
                self.client.start_notify(TX, lambda _, data: self.echoes.put_nowait(bytes(data))),
                timeout=ECHO_SECONDS,
            )

        await self.check("notifications on TX (6E400003)", subscribe)
        await self.check(
            "a line written with response comes back on TX", lambda: self.echo([b"hello blemu\r\n"], response=True)
        )
        burst = [f"AT+{index:02d}\r\n".encode() for index in range(10)]
        await self.check("ten commands without response come back in order", lambda: self.echo(burst, response=False))
        # As long as a phone's link carries in one notification (an ATT_MTU of 185, iOS's usual): bluetoothd as a
        # central exchanges 517, though bleak may still report 23 it read before the exchange.
        longest = 182
        block = bytes(index % 251 for index in range(longest))
        await self.check(
            f"a {longest}-byte write comes back whole", lambda: self.echo([block], response=True)
        )

        async def unsubscribe():
            await asyncio.wait_for(self.client.stop_notify(TX), timeout=ECHO_SECONDS)

        await self.check("notifications off", unsubscribe)


if __name__ == "__main__":
    unittest.main(verbosity=2)
