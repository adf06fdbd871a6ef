"""An indoor bike trainer in ERG mode, judged by pycycling, a cycling client for Python that nobody here wrote:

    blemu lab run --profile profiles/indoor-bike.yaml -- \
        ~/.cache/blemu/venv/bin/python examples/central-tests/ftms_pycycling_test.py

(scripts/setup --lab puts pycycling 0.4.1 in that venv, from requirements.txt beside this file.)

It scans with bleak's default adapter for the trainer's name (env BLEMU_FTMS_NAME, default "blemu Trainer") or the
Fitness Machine service (0x1826) in its advertisement, connects once, and drives it through pycycling's
FitnessMachineService: read the features and the power range, subscribe, then an ordered session on the Fitness
Machine Control Point (0x2AD9) as a training app runs it. Order matters (control is granted, then reset), so the
session is one test over one connection; it prints a line per check and stops at the first that fails.

The scan has no service-UUID filter: bluetoothd 5.87 crashes on UUID-filtered discovery from the same machine, so
the filter looks at each advertisement instead.

What pycycling does that a device author should know (pycycling 0.4.1, fitness_machine_service.py, ftms_parsers/):
- Every command is a Write Request (write_gatt_char(..., True)) and returns once the Write Response arrives; the
  result comes later as an indication. pycycling does not wait for it, nor check that indications are on: a device
  that follows FTMS answers a write made before enable_control_point_indicate() with ATT error 0xFD.
- Its response parser reads only bytes 1 and 2 (request op code, result code) into enums: it never checks byte 0 is
  0x80, ignores response parameters, and raises ValueError for a request op code it has no name for (0x15-0x7F)
  or a result code outside 0x01-0x05. That exception is raised inside bleak's notification callback, where
  dbus_fast logs and drops it, so an app would silently never see the response. This script wraps pycycling's
  handlers to keep the raw bytes and any parser exception, and checks both.
- Each enable_*_notify / get_* call resolves a characteristic by UUID and raises if the device lacks it: this
  session needs 0x2ACC, 0x2AD8, 0x2AD2, 0x2ADA and 0x2AD9 (pycycling also knows 0x2AD6 and 0x2AD3, unused here).
- get_all_features() indexes up to byte 6 of 0x2ACC (IndexError if shorter than 7 bytes; FTMS says 8).
- The Supported Power Range is parsed unsigned, though FTMS makes min and max sint16 (-10 W reads as 65526).
- Its Fitness Machine Status enum is not numbered by op code (0x08 Target Power Changed parses as NEW_POWER = 9),
  so compare .status with the enum member, never with the byte.
- Notifications that arrive before set_*_handler() are dropped; set the handlers first.
"""

import asyncio
import os
import unittest

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError
from pycycling.fitness_machine_service import FitnessMachineService
from pycycling.ftms_parsers import (
    ControlPointResponse,
    FitnessMachineStatus,
    FTMSControlPointOpCode as Op,
    FTMSControlPointResponseResultCode as Result,
)

FITNESS_MACHINE = "00001826-0000-1000-8000-00805f9b34fb"
CONTROL_POINT = "00002ad9-0000-1000-8000-00805f9b34fb"
NAME = os.environ.get("BLEMU_FTMS_NAME", "blemu Trainer")
SCAN_SECONDS = 30
CONNECT_SECONDS = 30
RESPONSE_SECONDS = 5  # for a write's Write Response, then again for its indication and its status notification
QUIET_SECONDS = 1  # how long a refused command is watched for a status it must not cause
ERG_SECONDS = 15
TARGET_WATTS = 200


def hexed(value: bytes) -> str:
    return value.hex(" ").upper() or "(empty)"


class Recording(FitnessMachineService):
    """pycycling's service, with its three notification handlers wrapped: each notification is queued as (raw bytes,
    what pycycling's parser made of it, or the exception it raised). pycycling's own handlers still parse and call the
    handlers set with its set_*_handler methods; only the raw bytes, and exceptions bleak would swallow, are added."""

    def __init__(self, client):
        super().__init__(client)
        self.responses: asyncio.Queue = asyncio.Queue()
        self.statuses: asyncio.Queue = asyncio.Queue()
        self.bike_data: asyncio.Queue = asyncio.Queue()
        self._parsed = None
        self.set_control_point_response_handler(self._keep)
        self.set_fitness_machine_status_handler(self._keep)
        self.set_indoor_bike_data_handler(self._keep)

    def _keep(self, parsed):
        self._parsed = parsed

    def _relay(self, queue, pycycling_handler, sender, data):
        self._parsed = None
        try:
            pycycling_handler(sender, data)
            parsed = self._parsed
        except Exception as error:  # pylint: disable=broad-except
            parsed = error
        queue.put_nowait((bytes(data), parsed))

    def _control_point_response_handler(self, sender, data):
        self._relay(self.responses, super()._control_point_response_handler, sender, data)

    def _fitness_machine_status_notification_handler(self, sender, data):
        self._relay(self.statuses, super()._fitness_machine_status_notification_handler, sender, data)

    def _indoor_bike_data_notification_handler(self, sender, data):
        self._relay(self.bike_data, super()._indoor_bike_data_notification_handler, sender, data)


def drain(queue: asyncio.Queue) -> None:
    while not queue.empty():
        queue.get_nowait()


async def next_item(queue: asyncio.Queue, what: str, seconds: float):
    try:
        return await asyncio.wait_for(queue.get(), timeout=seconds)
    except asyncio.TimeoutError:
        raise AssertionError(f"no {what} within {seconds} s") from None


class ErgTrainer(unittest.IsolatedAsyncioTestCase):
    """What an ERG workout app needs from a trainer, in the order it asks."""

    async def asyncSetUp(self):
        device = await BleakScanner.find_device_by_filter(
            lambda device, advertisement: NAME in (advertisement.local_name, device.name)
            or FITNESS_MACHINE in advertisement.service_uuids,
            timeout=SCAN_SECONDS,
        )
        self.assertIsNotNone(device, f"no {NAME!r} nor any Fitness Machine advertising within {SCAN_SECONDS} s")
        self.client = BleakClient(device)
        await asyncio.wait_for(self.client.connect(), timeout=CONNECT_SECONDS)
        print(f"\nconnected to {device.name!r} at {device.address}", flush=True)
        self.trainer = Recording(self.client)

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

    async def command(self, write, expected: bytes, status=None, no_status: bytes = None) -> str:
        """Writes one command and checks the control point's indication is exactly `expected`, as raw bytes and as
        pycycling parses it; with `status` (bytes, pycycling's FitnessMachineStatus, value), that a Fitness Machine
        Status notification of those bytes arrives too (before or after the indication: FTMS does not order them) and
        that pycycling parses it so; with `no_status`, that none starting with those bytes arrives."""
        drain(self.trainer.responses)
        drain(self.trainer.statuses)
        await asyncio.wait_for(write(), timeout=RESPONSE_SECONDS)
        raw, parsed = await next_item(self.trainer.responses, "control point indication", RESPONSE_SECONDS)
        self.assertEqual(hexed(raw), hexed(expected), "control point indication")
        self.assertIsInstance(parsed, ControlPointResponse, f"pycycling could not parse {hexed(raw)}: {parsed!r}")
        self.assertEqual(parsed.request_code_enum, Op(expected[1]), "pycycling's request op code")
        self.assertEqual(parsed.result_code_enum, Result(expected[2]), "pycycling's result code")
        seen = []
        if status is not None:
            status, status_as, value = status
            for _ in range(8):  # bounded: a device that streams other statuses fails, it does not hang
                raw_status, parsed_status = await next_item(
                    self.trainer.statuses, f"status {hexed(status)} (saw {seen or 'none'})", RESPONSE_SECONDS
                )
                seen.append(hexed(raw_status))
                if raw_status == status:
                    self.assertNotIsInstance(parsed_status, Exception, f"pycycling's status parser: {parsed_status!r}")
                    parsed_as = (parsed_status.status, parsed_status.value)
                    self.assertEqual(parsed_as, (status_as, value), "pycycling's status")
                    return f"{hexed(raw)}; status {hexed(raw_status)} = {parsed_status.status.name}"
            raise AssertionError(f"no status {hexed(status)} among {seen}")
        if no_status is not None:
            await asyncio.sleep(QUIET_SECONDS)
            while not self.trainer.statuses.empty():
                raw_status, _ = self.trainer.statuses.get_nowait()
                self.assertFalse(raw_status.startswith(no_status), f"unexpected status {hexed(raw_status)}")
        return hexed(raw)

    async def test_an_erg_session(self):
        trainer = self.trainer
        features = {}

        async def features_parse():
            machine, targets = await asyncio.wait_for(trainer.get_all_features(), timeout=RESPONSE_SECONDS)
            features["targets"] = targets
            self.assertTrue(targets.power_target_setting_supported, "Power Target Setting Supported (target bit 3)")
            return (
                f"power measurement {machine.power_measurement_supported}, cadence {machine.cadence_supported}, "
                f"resistance target {targets.resistance_target_setting_supported}, "
                f"simulation {targets.indoor_bike_simulation_parameters_supported}"
            )

        await self.check("Fitness Machine Feature (0x2ACC) parses and offers a power target", features_parse)

        async def power_range_parses():
            power = await asyncio.wait_for(trainer.get_supported_power_range(), timeout=RESPONSE_SECONDS)
            self.assertLess(power.minimum_power, power.maximum_power, f"{power}")
            self.assertTrue(
                power.minimum_power <= TARGET_WATTS <= power.maximum_power, f"{TARGET_WATTS} W outside {power}"
            )
            return f"{power.minimum_power}-{power.maximum_power} W by {power.minimum_increment}"

        await self.check("Supported Power Range (0x2AD8) parses, min < max", power_range_parses)

        async def subscribe():
            await asyncio.wait_for(trainer.enable_control_point_indicate(), timeout=RESPONSE_SECONDS)
            await asyncio.wait_for(trainer.enable_fitness_machine_status_notify(), timeout=RESPONSE_SECONDS)
            await asyncio.wait_for(trainer.enable_indoor_bike_data_notify(), timeout=RESPONSE_SECONDS)
            raw, parsed = await next_item(trainer.bike_data, "Indoor Bike Data notification", RESPONSE_SECONDS)
            self.assertNotIsInstance(parsed, Exception, f"pycycling could not parse {hexed(raw)}: {parsed!r}")
            self.assertIsNotNone(parsed.instant_power, f"no Instantaneous Power (flags bit 6) in {hexed(raw)}")
            return f"first Indoor Bike Data {hexed(raw)}: {parsed.instant_power} W, {parsed.instant_cadence} rpm"

        await self.check("indications on 0x2AD9, notifications on 0x2ADA and 0x2AD2", subscribe)

        await self.check(
            "Set Target Power before Request Control is refused: 80 05 05",
            lambda: self.command(
                lambda: trainer.set_target_power(TARGET_WATTS), bytes([0x80, 0x05, 0x05]), no_status=b"\x08"
            ),
        )
        await self.check(
            "Request Control: 80 00 01", lambda: self.command(trainer.request_control, bytes([0x80, 0x00, 0x01]))
        )
        await self.check(
            f"Set Target Power {TARGET_WATTS} W: 80 05 01 and status 08 C8 00",
            lambda: self.command(
                lambda: trainer.set_target_power(TARGET_WATTS),
                bytes([0x80, 0x05, 0x01]),
                status=(
                    b"\x08" + TARGET_WATTS.to_bytes(2, "little", signed=True),
                    FitnessMachineStatus.NEW_POWER,
                    TARGET_WATTS,
                ),
            ),
        )

        async def power_follows_the_target():
            drain(trainer.bike_data)
            seen = []
            deadline = asyncio.get_running_loop().time() + ERG_SECONDS
            while True:
                try:
                    raw, parsed = await asyncio.wait_for(
                        trainer.bike_data.get(), timeout=deadline - asyncio.get_running_loop().time()
                    )
                except asyncio.TimeoutError:
                    raise AssertionError(
                        f"Instantaneous Power not {TARGET_WATTS} W within {ERG_SECONDS} s; the last ones: {seen[-8:]}"
                    ) from None
                self.assertNotIsInstance(parsed, Exception, f"pycycling could not parse {hexed(raw)}: {parsed!r}")
                seen.append(parsed.instant_power)
                if parsed.instant_power == TARGET_WATTS:
                    return f"after {len(seen)} notifications: {seen}"

        await self.check(
            f"ERG: Indoor Bike Data's Instantaneous Power reaches {TARGET_WATTS} W within {ERG_SECONDS} s",
            power_follows_the_target,
        )

        # An op code pycycling can send that the trainer says (in 0x2ACC's target setting features) it does not support.
        targets = features["targets"]
        unsupported = [
            (targets.spin_down_control_supported, "Spin Down Control",
             lambda: trainer.set_spin_down_control(0x01), 0x13),
            (targets.targeted_cadence_configuration_supported, "Set Targeted Cadence",
             lambda: trainer.set_targeted_cadence(90), 0x14),
            (targets.heart_rate_target_setting_supported, "Set Target Heart Rate",
             lambda: trainer.set_target_heart_rate(140), 0x06),
            (targets.speed_target_setting_supported, "Set Target Speed", lambda: trainer.set_target_speed(3000), 0x02),
        ]
        candidates = [(name, write, op) for supported, name, write, op in unsupported if not supported]
        if candidates:
            name, write, op = candidates[0]
            await self.check(
                f"{name} (0x{op:02X}), which the features leave out: 80 {op:02X} 02",
                lambda: self.command(write, bytes([0x80, op, 0x02])),
            )
        else:
            print("skip an unsupported op code pycycling can send: the features claim all of 0x13, 0x14, 0x06, 0x02")

        # A reserved op code: pycycling has no method for it, so this is the one raw write, through the BleakClient it
        # wraps. Its parser cannot name 0x15 either (ValueError), so only the raw indication is checked.
        async def reserved_op_code():
            drain(trainer.responses)
            await asyncio.wait_for(self.client.write_gatt_char(CONTROL_POINT, b"\x15", True), timeout=RESPONSE_SECONDS)
            raw, parsed = await next_item(trainer.responses, "control point indication", RESPONSE_SECONDS)
            self.assertEqual(hexed(raw), hexed(bytes([0x80, 0x15, 0x02])), "control point indication")
            return f"{hexed(raw)}; pycycling: {parsed!r}"

        await self.check("reserved op code 0x15 (raw write): 80 15 02", reserved_op_code)

        await self.check(
            "Start or Resume: 80 07 01 and status 04",
            lambda: self.command(
                trainer.start_or_resume, b"\x80\x07\x01", status=(b"\x04", FitnessMachineStatus.STARTED_BY_USER, None)
            ),
        )
        await self.check(
            "Stop or Pause with pause (08 02): 80 08 01 and status 02 02",
            lambda: self.command(
                lambda: trainer.stop_or_pause(pause=True),
                b"\x80\x08\x01",
                status=(b"\x02\x02", FitnessMachineStatus.PAUSED_BY_USER, None),
            ),
        )
        await self.check("Reset: 80 01 01", lambda: self.command(trainer.reset, bytes([0x80, 0x01, 0x01])))
        await self.check(
            "Set Target Power after Reset is refused again (Reset revokes control): 80 05 05",
            lambda: self.command(
                lambda: trainer.set_target_power(TARGET_WATTS), bytes([0x80, 0x05, 0x05]), no_status=b"\x08"
            ),
        )

        async def unsubscribe():
            await asyncio.wait_for(trainer.disable_indoor_bike_data_notify(), timeout=RESPONSE_SECONDS)
            await asyncio.wait_for(trainer.disable_fitness_machine_status_notify(), timeout=RESPONSE_SECONDS)
            await asyncio.wait_for(trainer.disable_control_point_indicate(), timeout=RESPONSE_SECONDS)

        await self.check("notifications and indications off", unsubscribe)


if __name__ == "__main__":
    unittest.main(verbosity=2)
