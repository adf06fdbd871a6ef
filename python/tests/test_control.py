"""The package against a live `blemu run` of profiles/heart-rate.yaml: BLEMU_TEST_CONTROL and BLEMU_TEST_EVENTS
name its control socket and event log (Tests/BlueZTests/BlemuRunOnFakeBluetoothdTests.swift starts it on a
stand-in bluetoothd and runs this file). Standard library only: `python3 -m unittest discover -s python/tests`."""

import os
import unittest
from unittest import mock

from blemu import ControlError, ControlUnavailable, EventLog, Peripheral


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

    def test_a_refusal_names_the_command_and_the_reason(self):
        with self.assertRaises(ControlError) as refused:
            self.strap.get("no-such-characteristic")
        self.assertEqual(refused.exception.command, "get")
        self.assertIn("no-such-characteristic", refused.exception.reason)
        with self.assertRaises(ControlError) as unscheduled:
            self.strap.pause_schedules("body-sensor-location")
        self.assertEqual(unscheduled.exception.command, "schedules")
        self.assertIn("no schedule", unscheduled.exception.reason)

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
        self.assertIsInstance(self.strap.centrals(), list)
        self.assertIsInstance(self.strap.pairing(), list)

    def test_the_event_log_is_read_from_the_start_and_followed(self):
        log = EventLog(os.environ["BLEMU_TEST_EVENTS"])
        self.assertEqual(log.wait_for(lambda event: event["type"] == "state", timeout=5)["state"], "poweredOn")
        log.skip_to_end()
        self.assertIsNone(log.wait_for(lambda event: event["type"] == "state", timeout=0.2))


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
