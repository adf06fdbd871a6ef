"""An app team's BLE tests, written with bleak and pytest, against the plant sensor in device.yaml.

    blemu lab run --profile examples/pytest-bleak/device.yaml -- python -m pytest examples/pytest-bleak

No conftest: the `blemu_peripheral` fixture comes from the blemu Python package's pytest plugin (pip install
./python), which finds the lab's peripheral from the environment, or starts `blemu run` itself with
`--blemu-profile device.yaml` on a machine with an adapter. docs/ci.md walks through it.
"""

import asyncio
import contextlib

import pytest
from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError, BleakGATTProtocolError, BleakGATTProtocolErrorCode

ENVIRONMENTAL_SENSING = "0000181a-0000-1000-8000-00805f9b34fb"
PLANT = "5e1c0001-4b8a-4f3d-9c21-7a0e3b6d2f10"
TEMPERATURE = "00002a6e-0000-1000-8000-00805f9b34fb"
BATTERY_LEVEL = "00002a19-0000-1000-8000-00805f9b34fb"
ALARM_THRESHOLD = "5e1c0002-4b8a-4f3d-9c21-7a0e3b6d2f10"


async def find_sensor():
    """The sensor, found as the app finds it: by its advertised service."""
    device = await BleakScanner.find_device_by_filter(
        lambda _, advertisement: PLANT in advertisement.service_uuids, timeout=30
    )
    assert device is not None, "no plant sensor advertising within 30 s"
    return device


@contextlib.asynccontextmanager
async def connected():
    async with BleakClient(await find_sensor()) as client:
        yield client


def run(scenario):
    return asyncio.run(scenario())


def celsius(value: bytes) -> float:
    return int.from_bytes(value[:2], "little", signed=True) / 100


def test_the_sensor_advertises_its_name_and_services():
    async def scenario():
        found = {}

        def seen(device, advertisement):
            if PLANT in advertisement.service_uuids:
                found["advertisement"] = advertisement

        async with BleakScanner(seen):
            for _ in range(300):
                if "advertisement" in found and found["advertisement"].local_name:
                    break
                await asyncio.sleep(0.1)
        advertisement = found["advertisement"]
        assert advertisement.local_name == "Fern Sensor 07"
        assert ENVIRONMENTAL_SENSING in advertisement.service_uuids

    run(scenario)


def test_it_offers_its_three_services():
    async def scenario():
        async with connected() as sensor:
            services = {service.uuid for service in sensor.services}
            assert {ENVIRONMENTAL_SENSING, PLANT, "0000180f-0000-1000-8000-00805f9b34fb"} <= services

    run(scenario)


def test_the_battery_reads_as_a_percentage():
    async def scenario():
        async with connected() as sensor:
            assert await sensor.read_gatt_char(BATTERY_LEVEL) == bytearray([93])

    run(scenario)


def test_temperature_notifies_once_a_second_within_range():
    async def scenario():
        readings = []
        three = asyncio.Event()

        def notified(_, value):
            readings.append(celsius(value))
            if len(readings) == 3:
                three.set()

        async with connected() as sensor:
            await sensor.start_notify(TEMPERATURE, notified)
            await asyncio.wait_for(three.wait(), timeout=15)
        assert all(10 <= reading <= 25 for reading in readings), readings

    run(scenario)


def test_a_threshold_the_app_writes_reads_back():
    async def scenario():
        async with connected() as sensor:
            await sensor.write_gatt_char(ALARM_THRESHOLD, bytes([35]), response=True)
            assert await sensor.read_gatt_char(ALARM_THRESHOLD) == bytearray([35])

    run(scenario)


def test_an_out_of_range_threshold_is_refused_with_0x80(blemu_peripheral):
    async def scenario():
        async with connected() as sensor:
            with pytest.raises(BleakError, match="0x80"):
                await sensor.write_gatt_char(ALARM_THRESHOLD, bytes([99]), response=True)

    run(scenario)
    assert blemu_peripheral.get("alarm-threshold").fields["celsius"] != 99


def test_the_app_survives_a_read_that_fails(blemu_peripheral):
    blemu_peripheral.fault("read", "battery-level", error="unlikely-error")

    async def scenario():
        async with connected() as sensor:
            with pytest.raises(BleakGATTProtocolError) as refused:
                await sensor.read_gatt_char(BATTERY_LEVEL)
            assert refused.value.code == BleakGATTProtocolErrorCode.UNLIKELY_ERROR  # ATT 0x0E
            assert await sensor.read_gatt_char(BATTERY_LEVEL) == bytearray([93])  # once only

    run(scenario)


def test_a_temperature_the_test_sets_is_what_the_app_reads(blemu_peripheral):
    blemu_peripheral.pause_schedules("temperature")
    try:
        blemu_peripheral.set("temperature", fields={"centidegrees": 3550})

        async def scenario():
            async with connected() as sensor:
                assert celsius(await sensor.read_gatt_char(TEMPERATURE)) == 35.5

        run(scenario)
    finally:
        blemu_peripheral.resume_schedules("temperature")


def test_a_dropped_link_is_seen_by_the_app(blemu_peripheral):
    async def scenario():
        gone = asyncio.Event()
        async with BleakClient(await find_sensor(), disconnected_callback=lambda _: gone.set()) as sensor:
            blemu_peripheral.fault("read", "battery-level", effect="disconnect")
            await sensor.read_gatt_char(BATTERY_LEVEL)
            await asyncio.wait_for(gone.wait(), timeout=15)
            assert not sensor.is_connected

    run(scenario)


def test_every_request_was_answered_exactly_once(blemu_peripheral):
    counters = blemu_peripheral.counters()
    assert counters.requests > 0
    assert counters.unanswered == 0
