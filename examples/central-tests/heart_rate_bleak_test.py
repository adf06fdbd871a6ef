"""The heart-rate strap's central-side suite written with bleak, the Python BLE library most app teams use:

    blemu lab run --profile profiles/heart-rate.yaml -- \\
        ~/.cache/blemu/venv/bin/python examples/central-tests/heart_rate_bleak_test.py

Plain bleak, no workaround: find the strap by its advertised Heart Rate service, connect, read, write, subscribe.
`scripts/setup --lab` puts bleak in ~/.cache/blemu/venv, made from Debian's /usr/bin/python3 (the interpreter the lab
VM runs; the VM sees the host's root, not its /tmp). BLEMU_LAB_CENTRAL names the adapter bleak uses.
"""
import asyncio
import os
import unittest

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError

HEART_RATE = '0000180d-0000-1000-8000-00805f9b34fb'
HEART_RATE_MEASUREMENT = '00002a37-0000-1000-8000-00805f9b34fb'
BODY_SENSOR_LOCATION = '00002a38-0000-1000-8000-00805f9b34fb'
CONTROL_POINT = '00002a39-0000-1000-8000-00805f9b34fb'
BATTERY_LEVEL = '00002a19-0000-1000-8000-00805f9b34fb'
ADAPTER = os.environ.get('BLEMU_LAB_CENTRAL', 'hci0')


class HeartRateStrap(unittest.IsolatedAsyncioTestCase):
    """What a phone app needs from a chest strap, one connection per test as bleak users write them."""

    async def asyncSetUp(self):
        device = await BleakScanner.find_device_by_filter(
            lambda _, advertisement: HEART_RATE in advertisement.service_uuids, timeout=30, adapter=ADAPTER)
        self.assertIsNotNone(device, 'no strap advertising Heart Rate within 30 s')
        self.client = BleakClient(device, adapter=ADAPTER, timeout=30)
        await self.client.connect()

    async def asyncTearDown(self):
        await self.client.disconnect()

    async def test_body_sensor_location_is_chest(self):
        self.assertEqual(await self.client.read_gatt_char(BODY_SENSOR_LOCATION), b'\x01')

    async def test_battery_level_is_a_percentage(self):
        level = await self.client.read_gatt_char(BATTERY_LEVEL)
        self.assertEqual(len(level), 1)
        self.assertLessEqual(level[0], 100)

    async def test_three_measurements_arrive_with_a_plausible_heart_rate(self):
        values = asyncio.Queue()
        await self.client.start_notify(HEART_RATE_MEASUREMENT, lambda _, data: values.put_nowait(bytes(data)))
        received = [await asyncio.wait_for(values.get(), 15) for _ in range(3)]
        await self.client.stop_notify(HEART_RATE_MEASUREMENT)
        for value in received:
            flags, bpm = value[0], value[1]
            self.assertEqual(flags & 0x01, 0, 'bpm as u8')
            self.assertTrue(flags & 0x02, 'sensor contact detected')
            self.assertTrue(40 <= bpm <= 200, 'bpm %d' % bpm)

    async def test_the_control_point_resets_energy_expended(self):
        await self.client.write_gatt_char(CONTROL_POINT, b'\x01', response=True)

    async def test_the_control_point_refuses_an_unknown_opcode_with_0x80(self):
        with self.assertRaises(BleakError) as refused:
            await self.client.write_gatt_char(CONTROL_POINT, b'\x02', response=True)
        # bluetoothd's client names application errors by their ATT code; bleak passes its message on.
        self.assertIn('0x80', str(refused.exception))


if __name__ == '__main__':
    unittest.main(verbosity=2)
