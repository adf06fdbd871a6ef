"""The pairing scenario's central (PairingScenario.swift), on bluetoothd's client API with an agent of its own.

    pairing_central.py ADAPTER ADDRESS PASSKEY READ_UUID [WRITE_UUID TEXT]

Registers an Agent1 with capability KeyboardOnly (not as the default agent: that stays blemu's, which answers the
peripheral's side), finds ADDRESS and pairs with Device1.Pair before connecting: Pair then connects and pairs with
the caller's agent's IO capability (src/device.c pair_device, adapter_create_bonding). On a link that is already
up, 5.81 and later raise the ATT channel's security instead (commit 8e2cece67), and the kernel pairs with the
adapter's IO capability, which the default agent set. bluetoothd asks the agent of the caller of Pair for the
central's side of that pairing (the bonding request keeps the caller's agent), so RequestPasskey arrives here: PASSKEY is what it types, six digits, or `ctl:BLEMU:SOCK` to type
the passkey the peripheral displays, read from `BLEMU ctl SOCK pairing` as a tester would. A keyboard-only central
types in every Passkey Entry (Core Spec Vol 3, Part H, 2.3.5.1). Then, when the pairing succeeded, it reads
READ_UUID and writes TEXT to WRITE_UUID.

Prints one JSON object: `pair` ("ok" or the D-Bus error name), `agent` (the agent calls, in order), `typed` (the
passkey typed), `read` (hex, or the error name), `write` ("ok" or the error name). Exits 0 whenever it got that
far; 1 with a reason on stderr when it could not find or connect to the device.
"""
import json
import subprocess
import sys
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

sys.path.insert(0, __file__.rsplit('/', 1)[0])
from lab_central import Central, fail, hexed  # noqa: E402

AGENT_PATH = '/org/blemu/lab/central_agent'
adapter_name, address, passkey_source, read_uuid = sys.argv[1:5]
write_uuid, write_text = (sys.argv[5], sys.argv[6]) if len(sys.argv) > 6 else (None, None)
result = {'agent': []}


def passkey_to_type():
    """The passkey the central's user types: a fixed one, or the one the peripheral displays (polled for 15 s)."""
    if not passkey_source.startswith('ctl:'):
        return int(passkey_source)
    _, blemu, socket = passkey_source.split(':', 2)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        answer = subprocess.run([blemu, 'ctl', socket, 'pairing'], capture_output=True, text=True)
        if answer.returncode == 0:
            shown = [p for p in json.loads(answer.stdout)['pairings'] if p['method'] == 'display-passkey']
            if shown:
                return int(shown[-1]['passkey'])
        time.sleep(0.2)
    raise dbus.DBusException('no displayed passkey in 15 s', name='org.bluez.Error.Canceled')


class Agent(dbus.service.Object):
    """The central's side: types a passkey, confirms nothing else (a keyboard-only central cannot compare)."""

    @dbus.service.method('org.bluez.Agent1', in_signature='o', out_signature='u')
    def RequestPasskey(self, device):
        result['agent'].append('RequestPasskey')
        passkey = passkey_to_type()
        result['typed'] = '%06d' % passkey
        return dbus.UInt32(passkey)

    @dbus.service.method('org.bluez.Agent1', in_signature='ouq')
    def DisplayPasskey(self, device, passkey, entered):
        result['agent'].append('DisplayPasskey %06d' % passkey)

    @dbus.service.method('org.bluez.Agent1', in_signature='ou')
    def RequestConfirmation(self, device, passkey):
        result['agent'].append('RequestConfirmation %06d' % passkey)
        raise dbus.DBusException('a keyboard cannot compare', name='org.bluez.Error.Rejected')

    @dbus.service.method('org.bluez.Agent1', in_signature='o')
    def RequestAuthorization(self, device):
        result['agent'].append('RequestAuthorization')

    @dbus.service.method('org.bluez.Agent1')
    def Cancel(self):
        result['agent'].append('Cancel')

    @dbus.service.method('org.bluez.Agent1')
    def Release(self):
        result['agent'].append('Release')


dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
central = Central(adapter_name, address)
agent = Agent(central.bus, AGENT_PATH)
manager = dbus.Interface(central.bus.get_object('org.bluez', '/org/bluez'), 'org.bluez.AgentManager1')
manager.RegisterAgent(AGENT_PATH, 'KeyboardOnly')
central.forget()
central.discover(20)

loop = GLib.MainLoop()


def paired():
    result['pair'] = 'ok'
    loop.quit()


def failed(error):
    result['pair'] = error.get_dbus_name()
    result['pairError'] = error.get_dbus_message()
    loop.quit()


central.device.Pair(reply_handler=paired, error_handler=failed, timeout=60)
loop.run()

if result['pair'] == 'ok':
    deadline = time.monotonic() + 20
    while not central.properties.Get('org.bluez.Device1', 'ServicesResolved'):
        if time.monotonic() > deadline:
            fail('services not resolved in 20 s after pairing')
        time.sleep(0.2)
    try:
        result['read'] = hexed(central.characteristic(read_uuid).ReadValue({}))
    except dbus.DBusException as error:
        result['read'] = error.get_dbus_name()
    if write_uuid is not None:
        try:
            central.characteristic(write_uuid).WriteValue(dbus.ByteArray(write_text.encode()), {'type': 'request'})
            result['write'] = 'ok'
        except dbus.DBusException as error:
            result['write'] = error.get_dbus_name()
try:
    central.device.Disconnect()
except dbus.DBusException:
    pass
manager.UnregisterAgent(AGENT_PATH)
print(json.dumps(result), flush=True)
