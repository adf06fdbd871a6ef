# A central on bluetoothd's client API for the lab's notification stories (Tests/LabTests/ProfilesScenario.swift):
#   notify-central.py ADAPTER ADDRESS UUID OUT END_HEX SECONDS
# discovers ADDRESS on ADAPTER, connects, subscribes to the characteristic UUID, prints "subscribed", writes every
# value notified to OUT (one uppercase hex line each, in arrival order) until a value equals END_HEX, then
# unsubscribes and disconnects. Everything is bounded by SECONDS; a failure prints its reason and exits 1.
# With UUID "hold" it only connects, prints "connected" and keeps the link until SIGTERM or SECONDS.
import signal
import sys, time
import dbus, dbus.mainloop.glib
from gi.repository import GLib

adapter_name, target, uuid, out_path, end_hex, seconds = sys.argv[1:7]
target, uuid, end_hex, seconds = target.upper(), uuid.lower(), end_hex.upper(), float(seconds)
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
adapter_path = '/org/bluez/' + adapter_name
adapter = dbus.Interface(bus.get_object('org.bluez', adapter_path), 'org.bluez.Adapter1')
manager = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')
deadline = time.monotonic() + seconds


def fail(reason):
    print(adapter_name, reason, flush=True)
    sys.exit(1)


def find(predicate):
    while time.monotonic() < deadline:
        for path, interfaces in manager.GetManagedObjects().items():
            if predicate(path, interfaces):
                return path
        time.sleep(0.2)
    return None


adapter.SetDiscoveryFilter({'Transport': 'le'})
adapter.StartDiscovery()
device_path = find(lambda p, i: 'org.bluez.Device1' in i and i['org.bluez.Device1'].get('Adapter') == adapter_path
                   and str(i['org.bluez.Device1'].get('Address', '')).upper() == target)
if device_path is None:
    fail('device %s not found' % target)
# Before Connect: bluetoothd holds an LE Connect until a running discovery ends.
adapter.StopDiscovery()
device = dbus.Interface(bus.get_object('org.bluez', device_path), 'org.bluez.Device1')
device.Connect(timeout=max(1, deadline - time.monotonic()))
properties = dbus.Interface(bus.get_object('org.bluez', device_path), 'org.freedesktop.DBus.Properties')
while not properties.Get('org.bluez.Device1', 'ServicesResolved'):
    if time.monotonic() > deadline:
        fail('services not resolved')
    time.sleep(0.2)
if uuid == 'hold':
    print(adapter_name, 'connected', device_path, flush=True)
    hold = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, hold.quit)
    GLib.timeout_add(int(max(0.1, deadline - time.monotonic()) * 1000), hold.quit)
    hold.run()
    device.Disconnect()
    print(adapter_name, 'disconnected', flush=True)
    sys.exit(0)
path = find(lambda p, i: p.startswith(device_path + '/') and 'org.bluez.GattCharacteristic1' in i
            and str(i['org.bluez.GattCharacteristic1']['UUID']).lower() == uuid)
if path is None:
    fail('no characteristic ' + uuid)

values = []
loop = GLib.MainLoop()
outcome = {'reason': 'timed out after %g s with %d values' % (seconds, 0)}


def changed(interface, changed_properties, invalidated):
    if 'Value' not in changed_properties:
        return
    hexed = ''.join('%02X' % b for b in changed_properties['Value'])
    values.append(hexed)
    if hexed == end_hex:
        outcome['reason'] = None
        loop.quit()


def timed_out():
    outcome['reason'] = 'timed out after %g s with %d values' % (seconds, len(values))
    loop.quit()
    return False


bus.add_signal_receiver(changed, signal_name='PropertiesChanged', dbus_interface='org.freedesktop.DBus.Properties',
                        bus_name='org.bluez', path=path)
characteristic = dbus.Interface(bus.get_object('org.bluez', path), 'org.bluez.GattCharacteristic1')
characteristic.StartNotify()
print(adapter_name, 'subscribed', path, flush=True)
GLib.timeout_add(int(max(0.1, deadline - time.monotonic()) * 1000), timed_out)
loop.run()
with open(out_path, 'w') as out:
    out.write(''.join(v + '\n' for v in values))
try:
    characteristic.StopNotify()
    device.Disconnect()
except dbus.DBusException as error:
    print(adapter_name, 'cleanup:', error, flush=True)
if outcome['reason']:
    fail(outcome['reason'])
print(adapter_name, 'received', len(values), 'values', flush=True)
