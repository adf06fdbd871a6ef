# The thermostat scenario's central (ThermostatScenario.swift, lab-thermostat.sh), on bluetoothd's client API:
#   thermostat_central.py ADAPTER ADDRESS read|write HEX
# Discovers the address, connects, reads the set point (and writes HEX with a Write Request for `write`),
# disconnects. One line per result: `read HEX`, `wrote HEX`; exits non-zero with a reason on stderr.
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dbus
from lab_central import Central, hexed

# lab-thermostat.yaml's set point, lower case as bluetoothd spells it.
SET_POINT = '8d3a0002-6b1e-4c2f-9a57-3e2c1d0b4f61'

central = Central(sys.argv[1], sys.argv[2])
mode = sys.argv[3]
central.discover(20)
central.connect()
characteristic = central.characteristic(SET_POINT)
print('read', hexed(characteristic.ReadValue({})), flush=True)
if mode == 'write':
    value = bytes.fromhex(sys.argv[4])
    characteristic.WriteValue(dbus.Array(value, signature='y'), {'type': 'request'})
    print('wrote', hexed(value), flush=True)
central.device.Disconnect()
print('disconnected', flush=True)
