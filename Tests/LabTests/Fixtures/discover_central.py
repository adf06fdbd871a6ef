# The lab scenario's central (LabScenario.swift, lab-scenario.sh), on bluetoothd's D-Bus client API (docs/lab.md:
# fastest and deterministic): `discover_central.py ADAPTER ADDRESS`. LE discovery until the peripheral's address
# shows up, then Connect and wait for ServicesResolved. Prints one line per milestone.
import sys, time
import dbus

adapter_name, target = sys.argv[1], sys.argv[2].upper()
bus = dbus.SystemBus()
adapter_path = '/org/bluez/' + adapter_name
adapter = dbus.Interface(bus.get_object('org.bluez', adapter_path), 'org.bluez.Adapter1')
manager = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')

def find(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for path, interfaces in manager.GetManagedObjects().items():
            if predicate(path, interfaces):
                return path, interfaces
        time.sleep(0.2)
    return None, None

adapter.SetDiscoveryFilter({'Transport': 'le'})
adapter.StartDiscovery()
start = time.monotonic()
path, interfaces = find(lambda p, i: 'org.bluez.Device1' in i
                        and i['org.bluez.Device1'].get('Adapter') == adapter_path
                        and str(i['org.bluez.Device1'].get('Address', '')).upper() == target, 30)
if path is None:
    print('not found', target, flush=True)
    sys.exit(1)
device = interfaces['org.bluez.Device1']
print('found', device['Address'], 'name', device.get('Name', '?'), 'after %.1f s' % (time.monotonic() - start),
      flush=True)
adapter.StopDiscovery()
dbus.Interface(bus.get_object('org.bluez', path), 'org.bluez.Device1').Connect(timeout=30)
print('connected', flush=True)
properties = dbus.Interface(bus.get_object('org.bluez', path), 'org.freedesktop.DBus.Properties')
deadline = time.monotonic() + 20
while not properties.Get('org.bluez.Device1', 'ServicesResolved'):
    if time.monotonic() > deadline:
        print('services not resolved', flush=True)
        sys.exit(2)
    time.sleep(0.2)
print('services resolved', flush=True)
services = [str(i['org.bluez.GattService1']['UUID']) for p, i in manager.GetManagedObjects().items()
            if p.startswith(path + '/') and 'org.bluez.GattService1' in i]
print('services', ' '.join(sorted(services)), flush=True)
