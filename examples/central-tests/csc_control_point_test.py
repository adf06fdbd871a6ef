"""A speed-and-cadence sensor with its SC Control Point, judged as a bike computer uses it:

    blemu lab run --profile profiles/cycling-speed-cadence.yaml -- \
        ~/.cache/blemu/venv/bin/python examples/central-tests/csc_control_point_test.py

The measurement and the features are read through pycycling's CyclingSpeedCadenceService (pycycling 0.4.1), a
cycling client for Python that nobody here wrote. pycycling has no SC Control Point, so the control point's
exchanges are written here from the Cycling Speed and Cadence Service 1.0's text (3.4, over bleak): each request gets
its Write Response, then an indication `10 <request op code> <result>` (01 success, 02 op code not supported, 03
invalid parameter), with the supported locations after it for op code 04.

It scans with bleak's default adapter for the sensor's name (env BLEMU_CSC_NAME, default "CADENCE 4F2A") or the
service (0x1816) in its advertisement (no service-UUID filter: bluetoothd 5.87 crashes on UUID-filtered discovery
from the same machine), connects once, and runs one session, a line per check; the first failure ends it.

What pycycling does that a sensor's author should know (cycling_speed_cadence_service.py):
- get_csc_feature() reads 0x2A5C and keeps three bits (wheel, crank, multiple locations) of however many bytes come.
- Its measurement parser reads the flags' two low bits and slices without checking the length: a measurement shorter
  than its flags promise parses into smaller numbers, not an error.
- Notifications that arrive before set_csc_measurement_handler() are dropped; set the handler first.
"""

import asyncio
import os
import unittest

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError
from pycycling.cycling_speed_cadence_service import CyclingSpeedCadenceService

CYCLING_SPEED_AND_CADENCE = "00001816-0000-1000-8000-00805f9b34fb"
SENSOR_LOCATION = "00002a5d-0000-1000-8000-00805f9b34fb"
SC_CONTROL_POINT = "00002a55-0000-1000-8000-00805f9b34fb"
NAME = os.environ.get("BLEMU_CSC_NAME", "CADENCE 4F2A")
SCAN_SECONDS = 30
CONNECT_SECONDS = 30
RESPONSE_SECONDS = 5  # for a write's Write Response, then again for its indication
MEASUREMENT_SECONDS = 5  # the sensor notifies once a second
ODOMETER = 123_456  # the wheel count a bike computer carries over from the last ride
REAR_WHEEL, CHEST = 12, 14  # Sensor Location values (Assigned Numbers 6.3)


def hexed(value: bytes) -> str:
    return value.hex(" ").upper() or "(empty)"


async def next_item(queue: asyncio.Queue, what: str, seconds: float):
    try:
        return await asyncio.wait_for(queue.get(), timeout=seconds)
    except asyncio.TimeoutError:
        raise AssertionError(f"no {what} within {seconds} s") from None


class BikeComputer(unittest.IsolatedAsyncioTestCase):
    """What a bike computer needs from a speed-and-cadence sensor, in the order it asks."""

    async def asyncSetUp(self):
        device = await BleakScanner.find_device_by_filter(
            lambda device, advertisement: NAME in (advertisement.local_name, device.name)
            or CYCLING_SPEED_AND_CADENCE in advertisement.service_uuids,
            timeout=SCAN_SECONDS,
        )
        self.assertIsNotNone(device, f"no {NAME!r} nor any speed-and-cadence sensor advertising within {SCAN_SECONDS} s")
        self.client = BleakClient(device)
        await asyncio.wait_for(self.client.connect(), timeout=CONNECT_SECONDS)
        print(f"\nconnected to {device.name!r} at {device.address}", flush=True)
        self.sensor = CyclingSpeedCadenceService(self.client)
        self.measurements: asyncio.Queue = asyncio.Queue()
        self.responses: asyncio.Queue = asyncio.Queue()
        self.sensor.set_csc_measurement_handler(self.measurements.put_nowait)

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

    async def request(self, request: bytes, expected: bytes) -> str:
        """Writes one request with a Write Request and checks the indication that answers it is exactly `expected`."""
        while not self.responses.empty():
            self.responses.get_nowait()
        await asyncio.wait_for(self.client.write_gatt_char(SC_CONTROL_POINT, request, True), timeout=RESPONSE_SECONDS)
        raw = await next_item(self.responses, "SC Control Point indication", RESPONSE_SECONDS)
        self.assertEqual(hexed(raw), hexed(expected), f"the answer to {hexed(request)}")
        return hexed(raw)

    async def wheel_revolutions(self) -> int:
        measurement = await next_item(self.measurements, "CSC Measurement", MEASUREMENT_SECONDS)
        self.assertIsNotNone(measurement.cumulative_wheel_revs, f"no wheel data in {measurement}")
        return measurement.cumulative_wheel_revs

    async def test_a_ride(self):
        sensor = self.sensor

        async def features():
            feature = await asyncio.wait_for(sensor.get_csc_feature(), timeout=RESPONSE_SECONDS)
            self.assertTrue(feature.wheel_rev_supported and feature.crank_rev_supported, f"{feature}")
            # CSCS 3.4.2.3-4: Update Sensor Location and its list need this bit.
            self.assertTrue(feature.multiple_locations_supported, f"{feature}")
            return f"{feature}"

        await self.check("CSC Feature (0x2A5C): wheel, crank and multiple sensor locations", features)

        async def subscribe():
            await asyncio.wait_for(
                self.client.start_notify(SC_CONTROL_POINT, lambda _, data: self.responses.put_nowait(bytes(data))),
                timeout=RESPONSE_SECONDS,
            )
            await asyncio.wait_for(sensor.enable_csc_measurement_notifications(), timeout=RESPONSE_SECONDS)
            first = await self.wheel_revolutions()
            second = await self.wheel_revolutions()
            self.assertGreater(second, first, "the wheel turns")
            return f"wheel revolutions {first}, then {second}"

        await self.check("indications on 0x2A55; CSC Measurements parse and the wheel count grows", subscribe)

        await self.check(
            "Request Supported Sensor Locations: 10 04 01 and the list",
            lambda: self.request(b"\x04", bytes([0x10, 0x04, 0x01, 4, 5, 11, 12])),
        )

        async def set_cumulative_value():
            answer = await self.request(b"\x01" + ODOMETER.to_bytes(4, "little"), bytes([0x10, 0x01, 0x01]))
            # Measurements sent before the answer may still arrive: the count goes on from the value within a few.
            seen = []
            for _ in range(4):
                seen.append(await self.wheel_revolutions())
                if ODOMETER < seen[-1] <= ODOMETER + 40:
                    following = await self.wheel_revolutions()
                    self.assertEqual(following - seen[-1], 4, f"the count after {seen[-1]}")
                    return f"{answer}; then {seen[-1]}, {following}"
            raise AssertionError(f"the wheel count did not go on from {ODOMETER}: {seen}")

        await self.check(f"Set Cumulative Value {ODOMETER}: 10 01 01, and the count goes on from it", set_cumulative_value)

        async def move_the_sensor():
            answer = await self.request(bytes([0x03, REAR_WHEEL]), bytes([0x10, 0x03, 0x01]))
            location = await asyncio.wait_for(self.client.read_gatt_char(SENSOR_LOCATION), timeout=RESPONSE_SECONDS)
            self.assertEqual(hexed(location), hexed(bytes([REAR_WHEEL])), "Sensor Location (0x2A5D)")
            return f"{answer}; Sensor Location reads {hexed(location)}"

        await self.check("Update Sensor Location to the rear wheel: 10 03 01, and 0x2A5D reads 0C", move_the_sensor)

        async def refuse_a_location():
            answer = await self.request(bytes([0x03, CHEST]), bytes([0x10, 0x03, 0x03]))
            location = await asyncio.wait_for(self.client.read_gatt_char(SENSOR_LOCATION), timeout=RESPONSE_SECONDS)
            self.assertEqual(hexed(location), hexed(bytes([REAR_WHEEL])), "Sensor Location after a refusal")
            return f"{answer}; Sensor Location still {hexed(location)}"

        await self.check("Update Sensor Location to the chest, not listed: 10 03 03, location kept", refuse_a_location)
        await self.check(
            "Start Sensor Calibration, a running sensor's: 10 02 02",
            lambda: self.request(b"\x02", bytes([0x10, 0x02, 0x02])),
        )
        await self.check(
            "Set Cumulative Value two bytes short: 10 01 03",
            lambda: self.request(b"\x01\xe8\x03", bytes([0x10, 0x01, 0x03])),
        )
        await self.check("reserved op code 0x7F: 10 7F 02", lambda: self.request(b"\x7f", bytes([0x10, 0x7F, 0x02])))

        async def unsubscribe():
            await asyncio.wait_for(sensor.disable_csc_measurement_notifications(), timeout=RESPONSE_SECONDS)
            await asyncio.wait_for(self.client.stop_notify(SC_CONTROL_POINT), timeout=RESPONSE_SECONDS)

        await self.check("notifications and indications off", unsubscribe)


if __name__ == "__main__":
    unittest.main(verbosity=2)
