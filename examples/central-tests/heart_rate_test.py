#!/usr/bin/python3
"""A central-side test suite of the kind an app team writes, run against blemu's heart-rate strap in the lab:

    blemu lab run --profile profiles/heart-rate.yaml -- python3 examples/central-tests/heart_rate_test.py

The lab serves the profile on one virtual controller and runs this file on another, with BLEMU_LAB_CENTRAL (the
adapter to use) and BLEMU_LAB_PERIPHERAL_ADDRESS (the strap) set. It talks to the strap through bluetoothd's
client API, as a Linux app would (python3-dbus); `blemu lab run` exits with this file's exit code, so a failing
test fails the CI job. Swap in your own central: anything the VM can run from your checkout works.
"""
import os
import time
import unittest

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

HEART_RATE_SERVICE = '0000180d-0000-1000-8000-00805f9b34fb'
HEART_RATE_MEASUREMENT = '00002a37-0000-1000-8000-00805f9b34fb'
BODY_SENSOR_LOCATION = '00002a38-0000-1000-8000-00805f9b34fb'
CONTROL_POINT = '00002a39-0000-1000-8000-00805f9b34fb'
BATTERY_LEVEL = '00002a19-0000-1000-8000-00805f9b34fb'

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
objects = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError('no %s within %d s' % (what, seconds))


class HeartRateStrap(unittest.TestCase):
    """What a phone app needs from a chest strap."""

    @classmethod
    def setUpClass(cls):
        adapter_path = '/org/bluez/' + os.environ['BLEMU_LAB_CENTRAL']
        address = os.environ['BLEMU_LAB_PERIPHERAL_ADDRESS'].upper()
        adapter = dbus.Interface(bus.get_object('org.bluez', adapter_path), 'org.bluez.Adapter1')

        def strap():
            for path, interfaces in objects.GetManagedObjects().items():
                device = interfaces.get('org.bluez.Device1', {})
                if (device.get('Adapter') == adapter_path and str(device.get('Address')).upper() == address
                        and HEART_RATE_SERVICE in device.get('UUIDs', [])):
                    return path
            return None

        # The Heart Rate service is matched here, not in the filter: bluetoothd 5.87 crashes when a discovery filter
        # names UUIDs and a device matches (github.com/bluez/bluez/issues/2282, fixed after 5.87).
        adapter.SetDiscoveryFilter({'Transport': 'le'})
        adapter.StartDiscovery()
        try:
            cls.device_path = wait_for(strap, 30, 'strap advertising Heart Rate')
        finally:
            adapter.StopDiscovery()  # bluetoothd holds an LE connection until discovery stops
        cls.device = dbus.Interface(bus.get_object('org.bluez', cls.device_path), 'org.bluez.Device1')
        cls.device.Connect(timeout=30)
        properties = dbus.Interface(bus.get_object('org.bluez', cls.device_path), 'org.freedesktop.DBus.Properties')
        wait_for(lambda: properties.Get('org.bluez.Device1', 'ServicesResolved'), 30, 'service discovery')

    @classmethod
    def tearDownClass(cls):
        cls.device.Disconnect()

    def characteristic(self, uuid):
        for path, interfaces in objects.GetManagedObjects().items():
            found = interfaces.get('org.bluez.GattCharacteristic1')
            if path.startswith(self.device_path + '/') and found and str(found['UUID']) == uuid:
                return dbus.Interface(bus.get_object('org.bluez', path), 'org.bluez.GattCharacteristic1'), path
        self.fail('no characteristic ' + uuid)

    def test_body_sensor_location_is_chest(self):
        location, _ = self.characteristic(BODY_SENSOR_LOCATION)
        self.assertEqual(bytes(location.ReadValue({})), b'\x01')

    def test_battery_level_is_a_percentage(self):
        battery, _ = self.characteristic(BATTERY_LEVEL)
        level = bytes(battery.ReadValue({}))
        self.assertEqual(len(level), 1)
        self.assertLessEqual(level[0], 100)

    def test_measurements_arrive_once_a_second_with_a_plausible_heart_rate(self):
        measurement, path = self.characteristic(HEART_RATE_MEASUREMENT)
        values = []
        loop = GLib.MainLoop()

        def changed(interface, properties, invalidated):
            if 'Value' in properties:
                values.append(bytes(properties['Value']))
                if len(values) == 3:
                    loop.quit()

        match = bus.add_signal_receiver(changed, 'PropertiesChanged', 'org.freedesktop.DBus.Properties',
                                        path=path, arg0='org.bluez.GattCharacteristic1')
        measurement.StartNotify()
        GLib.timeout_add_seconds(15, loop.quit)
        loop.run()
        match.remove()
        measurement.StopNotify()
        self.assertEqual(len(values), 3, 'three measurements in 15 s')
        for value in values:
            flags, bpm = value[0], value[1]
            self.assertEqual(flags & 0x01, 0, 'bpm as u8')
            self.assertTrue(flags & 0x02, 'sensor contact detected')
            self.assertTrue(40 <= bpm <= 200, 'bpm %d' % bpm)

    def test_the_control_point_resets_energy_expended(self):
        control, _ = self.characteristic(CONTROL_POINT)
        control.WriteValue(dbus.Array([1], signature='y'), {'type': 'request'})

    def test_the_control_point_refuses_an_unknown_opcode_with_0x80(self):
        control, _ = self.characteristic(CONTROL_POINT)
        with self.assertRaises(dbus.DBusException) as refused:
            control.WriteValue(dbus.Array([2], signature='y'), {'type': 'request'})
        # bluetoothd's client names application errors by their ATT code (src/gatt-client.c).
        self.assertEqual(refused.exception.get_dbus_name(), 'org.bluez.Error.Failed')
        self.assertIn('0x80', refused.exception.get_dbus_message())


if __name__ == '__main__':
    unittest.main(verbosity=2)
