"""The package against a live `blemu run` of profiles/heart-rate.yaml: BLEMU_TEST_CONTROL and BLEMU_TEST_EVENTS
name its control socket and event log (Tests/BlueZTests/BlemuRunOnFakeBluetoothdTests.swift starts it on a
stand-in bluetoothd and runs this file). Standard library only: `python3 -m unittest discover -s python/tests`.
The pytest plugin's own tests are plugin_test.py (pytest's pytester; not collected here)."""

import asyncio
import os
import unittest
from unittest import mock

from blemu import AsyncPeripheral, ControlError, ControlUnavailable, EventLog, EventTimeout, Peripheral


@unittest.skipUnless(os.environ.get("BLEMU_TEST_CONTROL"), "needs a running blemu (BLEMU_TEST_CONTROL)")
class PeripheralAgainstBlemuRun(unittest.TestCase):
    def setUp(self):
        self.strap = Peripheral(os.environ["BLEMU_TEST_CONTROL"], events=os.environ.get("BLEMU_TEST_EVENTS"))

    def test_get_decodes_fields_and_set_changes_only_the_named_ones(self):
        self.strap.set("battery-level", b"\x57")
        battery = self.strap.get("battery-level")
        self.assertEqual(battery.bytes, b"\x57")
        self.assertEqual(battery.fields, {"percent": 87})
        self.assertEqual(self.strap.set("battery-level", fields={"percent": 50}).bytes, b"\x32")
        self.assertEqual(self.strap.get("battery-level").fields["percent"], 50)
        with self.assertRaises(ValueError):
            self.strap.set("battery-level")

    def test_describe_is_the_profile_served_with_its_fields(self):
        profile = self.strap.describe()
        self.assertTrue(profile["name"].startswith("Polar H10"))
        characteristics = {c["id"]: c for s in profile["services"] for c in s["characteristics"]}
        measurement = characteristics["heart-rate-measurement"]
        self.assertEqual(measurement["properties"], ["notify"])
        self.assertIn("bpm", [field["name"] for field in measurement["fields"]])
        self.assertEqual(characteristics["battery-level"]["fields"][0]["type"], "u8")

    def test_status_says_how_the_device_runs_and_what_it_advertises(self):
        status = self.strap.status()
        self.assertEqual(status["state"], "poweredOn")
        self.assertTrue(status["advertising"])
        self.assertEqual(status["adapter"], "hci0")
        structures = status["advertisement"]["structures"]
        uuids = [s for s in structures if s["type"] in ("02", "03")]
        self.assertEqual(len(uuids), 1, structures)
        self.assertIn("0D18", uuids[0]["bytes"])
        self.assertEqual(status["advertisement"]["adv"], "".join(s["bytes"] for s in structures if s["in"] == "adv"))

    def test_a_refusal_names_the_command_and_the_reason(self):
        with self.assertRaises(ControlError) as refused:
            self.strap.get("no-such-characteristic")
        self.assertEqual(refused.exception.command, "get")
        self.assertIn("no-such-characteristic", refused.exception.reason)
        with self.assertRaises(ControlError) as unscheduled:
            self.strap.pause_schedules("body-sensor-location")
        self.assertEqual(unscheduled.exception.command, "schedules")
        self.assertIn("no schedule", unscheduled.exception.reason)

    def test_state_is_empty_without_declared_variables_and_refuses_an_unknown_one(self):
        # profiles/heart-rate.yaml declares no `behaviour.state`: nothing to read, and nothing may be set.
        self.assertEqual(self.strap.state(), {})
        with self.assertRaises(ControlError) as refused:
            self.strap.state(control=True)
        self.assertEqual(refused.exception.command, "state")
        self.assertIn("unknown state variable `control`", refused.exception.reason)

    def test_a_handler_holds_its_claim_until_it_stops(self):
        handler = self.strap.on_read("body-sensor-location", deadline_ms=1000, fallback="unlikely-error")(
            lambda request: b"\x07"
        )
        self.assertEqual(handler.claim["handling"], ["body-sensor-location"])
        self.assertEqual((handler.claim["deadlineMs"], handler.claim["fallback"]), (1000, "0x0E"))
        with self.assertRaises(ControlError) as taken:
            self.strap.on_read("body-sensor-location")(lambda request: None)
        self.assertEqual(taken.exception.command, "handle")
        self.assertIn("another handler answers `body-sensor-location`", taken.exception.reason)
        with self.assertRaises(ControlError) as unknown:
            self.strap.on_write("no-such-characteristic")(lambda request: None)
        self.assertIn("no characteristic `no-such-characteristic`", unknown.exception.reason)
        handler.stop()
        again = self.strap.on_read("body-sensor-location")(lambda request: None)
        self.assertTrue(again.claim["ok"])
        again.stop()

    def test_schedules_pause_and_resume(self):
        paused = {schedule.id: schedule for schedule in self.strap.pause_schedules("battery-level")}
        self.assertTrue(paused["battery-level"].paused)
        self.assertFalse(paused["battery-level"].running)
        self.assertFalse(paused["heart-rate-measurement"].paused)
        resumed = {schedule.id: schedule for schedule in self.strap.resume_schedules()}
        self.assertTrue(resumed["battery-level"].running)
        self.assertEqual(resumed["battery-level"].interval_ms, 600_000)

    def test_counters_faults_and_centrals(self):
        self.strap.fault("read", "battery-level", nth=1000, error="unlikely-error")
        with self.assertRaises(ControlError) as bad:
            self.strap.fault("read", effect="explode")
        self.assertEqual(bad.exception.command, "fault")
        counters = self.strap.counters()
        self.assertEqual(counters.unanswered, 0)
        self.assertIn("eventLinesLost", counters.raw)
        # Nobody is connected to the stand-in bluetoothd's blemu: typed, empty lists.
        self.assertEqual(self.strap.centrals(), [])
        self.assertEqual(self.strap.pairing(), [])
        self.assertEqual(self.strap.disconnects(), [])
        self.assertEqual(self.strap.disconnect(), [])
        with self.assertRaises(ControlError) as stranger:
            self.strap.disconnect("/org/bluez/hci0/dev_00_00_00_00_00_00")
        self.assertEqual(stranger.exception.command, "disconnect")
        self.assertIn("is not connected", stranger.exception.reason)

    def test_reset_puts_a_set_value_back_and_releases_a_held_schedule(self):
        self.strap.set("battery-level", fields={"percent": 20})
        self.strap.pause_schedules("battery-level")
        self.assertIn("battery-level", self.strap.reset())
        self.assertEqual(self.strap.get("battery-level").fields, {"percent": 87})
        held = [schedule.id for schedule in self.strap.schedules() if schedule.paused]
        self.assertEqual(held, [])
        self.assertEqual(self.strap.reset(), [], "nothing left to put back")
        self.assertEqual(self.strap.recent_events()[-1]["type"], "reset")

    def test_counting_gives_what_the_block_made_the_peripheral_count(self):
        with self.strap.counting() as counted:
            self.strap.notify("battery-level", count=3)
        self.assertEqual(counted.delta.notifications_queued, 3)
        self.assertEqual(counted.delta.requests, 0)
        self.assertEqual(counted.delta.raw["notificationsQueued"], 3)

    def test_the_event_log_is_read_from_the_start_and_followed(self):
        log = EventLog(os.environ["BLEMU_TEST_EVENTS"])
        self.assertEqual(log.wait_for(lambda event: event["type"] == "state", timeout=5)["state"], "poweredOn")
        log.skip_to_end()
        self.assertIsNone(log.wait_for(lambda event: event["type"] == "state", timeout=0.2))


@unittest.skipUnless(os.environ.get("BLEMU_TEST_CONTROL"), "needs a running blemu (BLEMU_TEST_CONTROL)")
class AsyncPeripheralAgainstBlemuRun(unittest.IsolatedAsyncioTestCase):
    def setUp(self):
        self.strap = AsyncPeripheral(os.environ["BLEMU_TEST_CONTROL"], timeout=5)

    async def test_commands_are_awaited_and_typed(self):
        self.assertEqual((await self.strap.set("battery-level", bytes([0x30]))).fields, {"percent": 48})
        self.assertEqual((await self.strap.get("battery-level")).bytes, b"\x30")
        self.assertEqual(await self.strap.centrals(), [])
        with self.assertRaises(ControlError) as refused:
            await self.strap.get("no-such-characteristic")
        self.assertEqual(refused.exception.command, "get")
        async with self.strap.counting() as counted:
            await self.strap.notify("battery-level")
        self.assertEqual(counted.delta.notifications_queued, 1)

    async def test_an_expected_event_is_caught_even_when_it_comes_at_once(self):
        await self.strap.set("battery-level", fields={"percent": 11})
        async with self.strap.expect("reset") as seen:
            await self.strap.reset()
        self.assertEqual(seen.event["changed"], ["battery-level"])
        self.assertIn("time", seen.event)

    async def test_the_stream_yields_events_in_order_and_a_wait_names_what_came(self):
        async with self.strap.events() as stream:
            await self.strap.set("battery-level", fields={"percent": 12})
            await self.strap.reset()
            await self.strap.reset()
            first = await stream.wait_for("reset", changed=["battery-level"], timeout=5)
            second = await stream.wait_for("reset", timeout=5)
            self.assertEqual(second["changed"], [])
            self.assertLessEqual(first["time"], second["time"])
            with self.assertRaises(EventTimeout) as late:
                await stream.wait_for("subscribed", characteristic="battery-level", timeout=0.3)
            self.assertIn("no subscribed (characteristic=battery-level) within 0.3 s", str(late.exception))
        with self.assertRaises(EventTimeout):
            await self.strap.wait_for("reset", timeout=0.2)


class EventLogWithoutBlemu(unittest.TestCase):
    def test_a_disconnect_is_found_with_the_reason_bluetoothd_gave(self):
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as file:
            file.write('{"time":"t","type":"connected","central":"/org/bluez/hci0/dev_A"}\n')
            file.write('{"time":"t","type":"disconnected","central":"/org/bluez/hci0/dev_B"}\n')
            file.write(
                '{"time":"t","type":"disconnected","central":"/org/bluez/hci0/dev_A",'
                '"reason":"Remote","message":"Connection terminated by remote user"}\n'
            )
        try:
            event = EventLog(file.name).wait_for_disconnect("/org/bluez/hci0/dev_A", timeout=0)
            self.assertEqual(event["reason"], "Remote")
            self.assertEqual(event["message"], "Connection terminated by remote user")
            self.assertNotIn("reason", EventLog(file.name).wait_for_disconnect(timeout=0))
            self.assertIsNone(EventLog(file.name).wait_for_disconnect("/org/bluez/hci0/dev_C", timeout=0))
        finally:
            os.unlink(file.name)


class PeripheralWithoutBlemu(unittest.TestCase):
    def test_an_unreachable_socket_is_control_unavailable(self):
        with self.assertRaises(ControlUnavailable) as unreachable:
            Peripheral("/nonexistent/blemu.sock", timeout=1).counters()
        self.assertEqual(unreachable.exception.command, "counters")
        with self.assertRaises(ControlUnavailable) as unreachable:
            asyncio.run(AsyncPeripheral("/nonexistent/blemu.sock", timeout=1).reset())
        self.assertEqual(unreachable.exception.command, "reset")

    def test_counters_subtract_into_what_happened_between(self):
        from blemu.control import _counters

        before = _counters({"requests": 3, "answered": 3, "notificationsSent": 1})
        after = _counters({"requests": 7, "answered": 6, "notificationsSent": 1, "queueFull": 2})
        between = after - before
        self.assertEqual((between.requests, between.answered, between.unanswered), (4, 3, 1))
        self.assertEqual(between.raw["queueFull"], 2)
        self.assertEqual(between.notifications_sent, 0)

    def test_an_answer_is_built_from_what_a_handler_returns(self):
        from blemu import PROFILE, AttError, Request
        from blemu.handlers import answer_line

        request = Request.parse({"request": 4, "operation": "write", "id": "cp", "central": "c", "mtu": 185, "hex": "0A0B"})
        self.assertEqual((request.value, request.mtu, request.without_response), (b"\x0a\x0b", 185, False))
        self.assertEqual(answer_line(request, None), {"answer": 4})
        self.assertEqual(answer_line(request, b"\x01\xff"), {"answer": 4, "hex": "01FF"})
        self.assertEqual(answer_line(request, PROFILE), {"answer": 4, "profile": True})
        self.assertEqual(answer_line(request, AttError(0x80)), {"answer": 4, "error": 0x80})
        with self.assertRaises(TypeError):
            answer_line(request, 42)

    def test_from_lab_reads_the_lab_environment(self):
        lab = {
            "BLEMU_LAB_CONTROLS": "/run/blemu/hci0.sock,/run/blemu/hci1.sock",
            "BLEMU_LAB_EVENT_LOGS": "/r/events-hci0.jsonl,/r/events-hci1.jsonl",
            "BLEMU_LAB_PERIPHERAL_ADDRESS": "00:AA:01:00:00:00,00:AA:01:01:00:01",
        }
        with mock.patch.dict(os.environ, lab, clear=True):
            second = Peripheral.from_lab(1)
            self.assertEqual(second.control, "/run/blemu/hci1.sock")
            self.assertEqual(second.event_log.path, "/r/events-hci1.jsonl")
            self.assertEqual(second.address, "00:AA:01:01:00:01")
            with self.assertRaises(ControlUnavailable):
                Peripheral.from_lab(2)
        with mock.patch.dict(os.environ, {}, clear=True):
            with self.assertRaises(ControlUnavailable):
                Peripheral.from_lab()


if __name__ == "__main__":
    unittest.main(verbosity=2)
