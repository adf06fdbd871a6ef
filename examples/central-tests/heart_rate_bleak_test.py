"""The same strap tests as heart_rate_test.py, written with bleak, the Python central most app teams use:

    scripts/setup --lab    # also makes ~/.cache/blemu/venv with bleak (examples/central-tests/requirements.txt)
    blemu lab run --profile profiles/heart-rate.yaml -- \
        ~/.cache/blemu/venv/bin/python examples/central-tests/heart_rate_bleak_test.py

Nothing here knows about the lab: it scans for the Heart Rate service with bleak's default adapter and connects, as
it would on a laptop next to a real strap. (In the lab, bleak's default adapter is the central's controller; see
docs/lab.md.) `blemu lab run` exits with this file's exit code, so a failing test fails the CI job.
"""

import asyncio
import unittest

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError

HEART_RATE = "0000180d-0000-1000-8000-00805f9b34fb"
HEART_RATE_MEASUREMENT = "00002a37-0000-1000-8000-00805f9b34fb"
BODY_SENSOR_LOCATION = "00002a38-0000-1000-8000-00805f9b34fb"
CONTROL_POINT = "00002a39-0000-1000-8000-00805f9b34fb"
BATTERY_LEVEL = "00002a19-0000-1000-8000-00805f9b34fb"


class HeartRateStrap(unittest.IsolatedAsyncioTestCase):
    """What a phone app needs from a chest strap, over one connection per test."""

    async def asyncSetUp(self):
        device = await BleakScanner.find_device_by_filter(
            lambda _, advertisement: HEART_RATE in advertisement.service_uuids, timeout=30
        )
        self.assertIsNotNone(device, "no strap advertising Heart Rate within 30 s")
        self.client = BleakClient(device)
        await self.client.connect()

    async def asyncTearDown(self):
        await self.client.disconnect()

    async def test_the_strap_offers_heart_rate_battery_and_device_information(self):
        services = {service.uuid for service in self.client.services}
        for uuid in (HEART_RATE, "0000180f-0000-1000-8000-00805f9b34fb", "0000180a-0000-1000-8000-00805f9b34fb"):
            self.assertIn(uuid, services)

    async def test_body_sensor_location_is_chest(self):
        self.assertEqual(await self.client.read_gatt_char(BODY_SENSOR_LOCATION), bytearray(b"\x01"))

    async def test_battery_level_is_a_percentage(self):
        level = await self.client.read_gatt_char(BATTERY_LEVEL)
        self.assertEqual(len(level), 1)
        self.assertLessEqual(level[0], 100)

    async def test_measurements_arrive_once_a_second_with_a_plausible_heart_rate(self):
        values: list[bytes] = []
        three = asyncio.Event()

        def measured(_, value: bytearray):
            values.append(bytes(value))
            if len(values) == 3:
                three.set()

        await self.client.start_notify(HEART_RATE_MEASUREMENT, measured)
        try:
            await asyncio.wait_for(three.wait(), timeout=15)
        finally:
            await self.client.stop_notify(HEART_RATE_MEASUREMENT)
        for value in values[:3]:
            flags, bpm = value[0], value[1]
            self.assertEqual(flags & 0x01, 0, "bpm as u8")
            self.assertTrue(flags & 0x02, "sensor contact detected")
            self.assertTrue(40 <= bpm <= 200, f"bpm {bpm}")

    async def test_the_control_point_resets_energy_expended(self):
        await self.client.write_gatt_char(CONTROL_POINT, b"\x01", response=True)

    async def test_the_control_point_refuses_an_unknown_opcode_with_0x80(self):
        with self.assertRaises(BleakError) as refused:
            await self.client.write_gatt_char(CONTROL_POINT, b"\x02", response=True)
        # bluetoothd's client names an application error by its ATT code (src/gatt-client.c).
        self.assertIn("0x80", str(refused.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
