# The lifecycle scenario's central (LifecycleScenario.swift, lab-lifecycle.sh), on bluetoothd's client API:
#   lifecycle_central.py ADAPTER ADDRESS read|hang-up|hold [DIR]
# Forgets the device, discovers it afresh, connects, reads the marker; `read` then disconnects, `hang-up` reads
# `hang-up` and waits for the link to drop without asking, `hold` subscribes to `beat` and prints each value that
# arrives and each change of `Connected` until DIR/hold-done exists. One line per result; exits non-zero with a
# reason on stderr. The UUIDs are lab-lifecycle.yaml's, lower case as bluetoothd spells them.
import os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dbus
from lab_central import Central, fail, hexed

MARKER = '8d3a1002-6b1e-4c2f-9a57-3e2c1d0b4f61'
HANG_UP = '8d3a1003-6b1e-4c2f-9a57-3e2c1d0b4f61'
BEAT = '8d3a1004-6b1e-4c2f-9a57-3e2c1d0b4f61'

central = Central(sys.argv[1], sys.argv[2])
mode = sys.argv[3]
central.forget()
start = time.monotonic()
central.discover(20)
print('found after %.1f s' % (time.monotonic() - start), flush=True)
central.connect()
print('connected', flush=True)
device, properties, characteristic = central.device, central.properties, central.characteristic

print('read', hexed(characteristic(MARKER).ReadValue({})), flush=True)
if mode == 'read':
    device.Disconnect()
    print('disconnected', flush=True)
    sys.exit(0)
if mode == 'hold':
    beat = characteristic(BEAT)
    beat_properties = dbus.Interface(beat.proxy_object, 'org.freedesktop.DBus.Properties')
    beat.StartNotify()
    print('subscribed', flush=True)
    # Notifications update the cached Value (no ATT read): poll it and Connected until told to stop. When
    # the peripheral's services go (Service Changed), the object goes too: look for its successor.
    value, connected = None, True
    while not os.path.exists(sys.argv[4] + '/hold-done'):
        try:
            now = hexed(beat_properties.Get('org.bluez.GattCharacteristic1', 'Value'))
        except dbus.DBusException as error:
            print('beat object gone:', error.get_dbus_name(), flush=True)
            path = central.characteristic_path(BEAT, 10)
            if path is None:
                print('beat not found again in 10 s', flush=True)
                break
            beat_properties = dbus.Interface(central.bus.get_object('org.bluez', path),
                                             'org.freedesktop.DBus.Properties')
            notifying = beat_properties.Get('org.bluez.GattCharacteristic1', 'Notifying')
            print('beat found again at', path, 'notifying', bool(notifying), flush=True)
            value = None
            continue
        if now != value:
            value = now
            print('value', value, flush=True)
        is_connected = bool(properties.Get('org.bluez.Device1', 'Connected'))
        if is_connected != connected:
            connected = is_connected
            print('connected', connected, flush=True)
        time.sleep(0.1)
    print('done, connected', connected, flush=True)
    sys.exit(0)
print('hang-up read', hexed(characteristic(HANG_UP).ReadValue({})), flush=True)
start = time.monotonic()
while properties.Get('org.bluez.Device1', 'Connected'):
    if time.monotonic() - start > 15:
        fail('still connected 15 s after reading hang-up')
    time.sleep(0.1)
print('link dropped by the peripheral after %.1f s' % (time.monotonic() - start), flush=True)
