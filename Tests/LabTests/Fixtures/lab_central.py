"""The lab scenarios' shared central on bluetoothd's client API (python3-dbus), imported by the central scripts
ThermostatScenario and LifecycleScenario write: find the peripheral by address, connect, look up characteristics.
A failure prints its reason on stderr and exits 1; every wait is bounded."""
import sys
import time

import dbus

DEVICE = 'org.bluez.Device1'
CHARACTERISTIC = 'org.bluez.GattCharacteristic1'
PROPERTIES = 'org.freedesktop.DBus.Properties'


def fail(reason):
    print(reason, file=sys.stderr, flush=True)
    sys.exit(1)


def hexed(value):
    """Bytes as blemu spells them: uppercase hex, no separator."""
    return ''.join('%02X' % b for b in value)


class Central:
    """The central adapter `adapter_name` and the peripheral at `target` (an address)."""

    def __init__(self, adapter_name, target):
        self.bus = dbus.SystemBus()
        self.adapter_path = '/org/bluez/' + adapter_name
        self.adapter = dbus.Interface(self.bus.get_object('org.bluez', self.adapter_path), 'org.bluez.Adapter1')
        self.manager = dbus.Interface(self.bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')
        self.target = target.upper()
        self.device_path = None
        self.device = None
        self.properties = None

    def is_target(self, path, interfaces):
        device = interfaces.get(DEVICE)
        return (device is not None and device.get('Adapter') == self.adapter_path
                and str(device.get('Address', '')).upper() == self.target)

    def find(self, predicate, seconds):
        """The first object path `predicate(path, interfaces)` accepts within `seconds`, else None."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for path, interfaces in self.manager.GetManagedObjects().items():
                if predicate(path, interfaces):
                    return path
            time.sleep(0.2)
        return None

    def forget(self):
        """Removes a cached device object, which would be found without any advertisement."""
        for path, interfaces in self.manager.GetManagedObjects().items():
            if self.is_target(path, interfaces):
                self.adapter.RemoveDevice(path)

    def discover(self, seconds=20):
        """LE discovery until the target shows up, then discovery stopped: bluetoothd holds an LE Connect until a
        running discovery ends (~10 s of LE scanning)."""
        self.adapter.SetDiscoveryFilter({'Transport': 'le'})
        self.adapter.StartDiscovery()
        self.device_path = self.find(self.is_target, seconds)
        if self.device_path is None:
            fail('device %s not found in %d s' % (self.target, seconds))
        self.adapter.StopDiscovery()
        self.device = dbus.Interface(self.bus.get_object('org.bluez', self.device_path), DEVICE)
        self.properties = dbus.Interface(self.bus.get_object('org.bluez', self.device_path), PROPERTIES)

    def connect(self, retry_seconds=30, resolve_seconds=20):
        """Connects, retrying for `retry_seconds` (a device object can outlive its advertising: connecting may
        fail while the peripheral restarts), then waits for service discovery."""
        deadline = time.monotonic() + retry_seconds
        while True:
            try:
                self.device.Connect(timeout=20)
                break
            except dbus.DBusException as error:
                if time.monotonic() > deadline:
                    fail('Connect failed: %s' % error)
                print('connect retry after', error.get_dbus_name(), flush=True)
                time.sleep(0.5)
        deadline = time.monotonic() + resolve_seconds
        while not self.properties.Get(DEVICE, 'ServicesResolved'):
            if time.monotonic() > deadline:
                fail('services not resolved in %d s' % resolve_seconds)
            time.sleep(0.2)

    def characteristic_path(self, uuid, seconds=5):
        """The object path of the peripheral's characteristic `uuid` (lower case), or None."""
        return self.find(lambda p, i: p.startswith(self.device_path + '/') and CHARACTERISTIC in i
                         and str(i[CHARACTERISTIC]['UUID']).lower() == uuid, seconds)

    def characteristic(self, uuid, seconds=5):
        path = self.characteristic_path(uuid, seconds)
        if path is None:
            fail('no characteristic %s under %s' % (uuid, self.device_path))
        return dbus.Interface(self.bus.get_object('org.bluez', path), CHARACTERISTIC)
