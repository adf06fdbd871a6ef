"""An app team's BLE tests, written with bleak and pytest (async, with pytest-asyncio), against the plant sensor in
device.yaml.

    blemu lab run --profile examples/pytest-bleak/device.yaml -- python -m pytest examples/pytest-bleak

No conftest: the `blemu_async_peripheral` fixture comes from the blemu Python package's pytest plugin (pip install
./python), which finds the lab's peripheral from the environment, or starts `blemu run` itself with
`--blemu-profile device.yaml` on a machine with an adapter. Each test that takes it starts from the profile's state
(the fixture resets the device first), so no test cleans up after itself. docs/ci.md walks through it.
"""

import asyncio
from typing import Dict, List

import pytest
import pytest_asyncio
from bleak import BleakClient, BleakScanner
from bleak.backends.characteristic import BleakGATTCharacteristic
from bleak.backends.device import BLEDevice
from bleak.backends.scanner import AdvertisementData
from bleak.exc import BleakError, BleakGATTProtocolError, BleakGATTProtocolErrorCode

from blemu import AsyncPeripheral

pytestmark = pytest.mark.asyncio

ENVIRONMENTAL_SENSING = "0000181a-0000-1000-8000-00805f9b34fb"
PLANT = "5e1c0001-4b8a-4f3d-9c21-7a0e3b6d2f10"
TEMPERATURE = "00002a6e-0000-1000-8000-00805f9b34fb"
BATTERY_LEVEL = "00002a19-0000-1000-8000-00805f9b34fb"
ALARM_THRESHOLD = "5e1c0002-4b8a-4f3d-9c21-7a0e3b6d2f10"


@pytest_asyncio.fixture
async def sensor() -> BLEDevice:
    """The sensor, found as the app finds it: by its advertised service."""
    device = await BleakScanner.find_device_by_filter(
        lambda _, advertisement: PLANT in advertisement.service_uuids, timeout=30
    )
    assert device is not None, "no plant sensor advertising within 30 s"
    return device


def celsius(value: bytearray) -> float:
    return int.from_bytes(value[:2], "little", signed=True) / 100


async def test_the_sensor_advertises_its_name_and_services() -> None:
    named = asyncio.Event()
    found: Dict[str, AdvertisementData] = {}

    def seen(device: BLEDevice, advertisement: AdvertisementData) -> None:
        if PLANT in advertisement.service_uuids and advertisement.local_name:
            found["advertisement"] = advertisement
            named.set()

    async with BleakScanner(seen):
        await asyncio.wait_for(named.wait(), timeout=30)
    advertisement = found["advertisement"]
    assert advertisement.local_name == "Fern Sensor 07"
    assert ENVIRONMENTAL_SENSING in advertisement.service_uuids


async def test_it_offers_its_three_services(sensor: BLEDevice) -> None:
    async with BleakClient(sensor) as client:
        services = {service.uuid for service in client.services}
        assert {ENVIRONMENTAL_SENSING, PLANT, "0000180f-0000-1000-8000-00805f9b34fb"} <= services


async def test_the_battery_reads_as_a_percentage(sensor: BLEDevice) -> None:
    async with BleakClient(sensor) as client:
        assert await client.read_gatt_char(BATTERY_LEVEL) == bytearray([93])


async def test_temperature_notifies_once_a_second_within_range(sensor: BLEDevice) -> None:
    readings: List[float] = []
    three = asyncio.Event()

    def notified(_: BleakGATTCharacteristic, value: bytearray) -> None:
        readings.append(celsius(value))
        if len(readings) == 3:
            three.set()

    async with BleakClient(sensor) as client:
        await client.start_notify(TEMPERATURE, notified)
        await asyncio.wait_for(three.wait(), timeout=15)
    assert all(10 <= reading <= 25 for reading in readings), readings


async def test_a_threshold_the_app_writes_reads_back(sensor: BLEDevice, blemu_async_peripheral: AsyncPeripheral) -> None:
    async with BleakClient(sensor) as client:
        async with blemu_async_peripheral.expect("request", characteristic="alarm-threshold") as written:
            await client.write_gatt_char(ALARM_THRESHOLD, bytes([35]), response=True)
        assert written.event["result"] == "success"
        assert await client.read_gatt_char(ALARM_THRESHOLD) == bytearray([35])


async def test_an_out_of_range_threshold_is_refused_with_0x80(sensor: BLEDevice, blemu_async_peripheral: AsyncPeripheral) -> None:
    async with BleakClient(sensor) as client:
        with pytest.raises(BleakError, match="0x80"):
            await client.write_gatt_char(ALARM_THRESHOLD, bytes([99]), response=True)
    assert (await blemu_async_peripheral.get("alarm-threshold")).fields["celsius"] == 30


async def test_the_app_survives_a_read_that_fails(sensor: BLEDevice, blemu_async_peripheral: AsyncPeripheral) -> None:
    await blemu_async_peripheral.fault("read", "battery-level", error="unlikely-error")
    async with BleakClient(sensor) as client:
        with pytest.raises(BleakGATTProtocolError) as refused:
            await client.read_gatt_char(BATTERY_LEVEL)
        assert refused.value.code == BleakGATTProtocolErrorCode.UNLIKELY_ERROR  # ATT 0x0E
        assert await client.read_gatt_char(BATTERY_LEVEL) == bytearray([93])  # once only


async def test_a_temperature_the_test_sets_is_what_the_app_reads(sensor: BLEDevice, blemu_async_peripheral: AsyncPeripheral) -> None:
    await blemu_async_peripheral.pause_schedules("temperature")  # held until the next test's reset
    await blemu_async_peripheral.set("temperature", fields={"centidegrees": 3550})
    async with BleakClient(sensor) as client:
        assert celsius(await client.read_gatt_char(TEMPERATURE)) == 35.5


async def test_a_dropped_link_is_seen_by_the_app(sensor: BLEDevice, blemu_async_peripheral: AsyncPeripheral) -> None:
    gone = asyncio.Event()
    async with BleakClient(sensor, disconnected_callback=lambda _: gone.set()) as client:
        await blemu_async_peripheral.fault("read", "battery-level", effect="disconnect")
        await client.read_gatt_char(BATTERY_LEVEL)
        await asyncio.wait_for(gone.wait(), timeout=15)
        assert not client.is_connected


async def test_the_app_connects_again_after_the_device_walks_away(sensor: BLEDevice, blemu_async_peripheral: AsyncPeripheral) -> None:
    gone = asyncio.Event()
    async with BleakClient(sensor, disconnected_callback=lambda _: gone.set()) as client:
        assert await blemu_async_peripheral.disconnect() != []
        await asyncio.wait_for(gone.wait(), timeout=15)
    # As an app does: find it again, connect again, carry on.
    device = await BleakScanner.find_device_by_filter(
        lambda _, advertisement: PLANT in advertisement.service_uuids, timeout=30
    )
    assert device is not None, "the sensor did not advertise again within 30 s"
    async with BleakClient(device) as client:
        assert (await client.read_gatt_char(BATTERY_LEVEL))[0] <= 100


async def test_every_request_of_a_test_is_answered_exactly_once(sensor: BLEDevice, blemu_async_peripheral: AsyncPeripheral) -> None:
    async with blemu_async_peripheral.counting() as counted:
        async with BleakClient(sensor) as client:
            for _ in range(3):
                await client.read_gatt_char(BATTERY_LEVEL)
    assert counted.delta.requests == 3
    assert counted.delta.unanswered == 0
