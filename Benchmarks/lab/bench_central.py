#!/usr/bin/python3
"""The lab benchmark's driver (Benchmarks/run-lab), run inside the lab VM by `blemu lab run`.

For each contender in CONFIG (JSON written by run-lab) it starts the contender on the peripheral controller
(hci0, where every contender registers), times it until bluetoothd has its advertisement (or until its
start-up marker line, for one that does not advertise), connects from the central controller through
bluetoothd's own client API, runs the workloads the contender supports, disconnects, forgets the device and
stops the contender. Everything goes over real bluetoothd 5.66 on both sides and btvirt's virtual link.

Writes $BLEMU_LAB_RESULTS/lab-bench.json; each contender's output goes to $BLEMU_LAB_RESULTS/<name>.log.
"""
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

ADAPTER = 'org.bluez.Adapter1'
DEVICE = 'org.bluez.Device1'
CHARACTERISTIC = 'org.bluez.GattCharacteristic1'
PROPERTIES = 'org.freedesktop.DBus.Properties'

config = json.load(open(sys.argv[1]))
results_dir = os.environ['BLEMU_LAB_RESULTS']
peripheral_path = '/org/bluez/' + os.environ['BLEMU_LAB_PERIPHERAL'].split(',')[0]
central_path = '/org/bluez/' + os.environ['BLEMU_LAB_CENTRAL']
target = os.environ['BLEMU_LAB_PERIPHERAL_ADDRESS'].split(',')[0].upper()

dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
manager = dbus.Interface(bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')
adapter = dbus.Interface(bus.get_object('org.bluez', central_path), ADAPTER)


class Failure(Exception):
    """A contender or a step failed; recorded in its result, the run goes on."""


def log(*parts):
    print('lab-bench:', *parts, flush=True)


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    raise Failure('gave up after %d s waiting for %s' % (seconds, what))


def active_advertisements():
    try:
        return int(bus.get_object('org.bluez', peripheral_path).Get(
            'org.bluez.LEAdvertisingManager1', 'ActiveInstances', dbus_interface=PROPERTIES))
    except dbus.DBusException:
        return 0


class Contender:
    """One running contender: its process, a thread copying its output to a log and spotting its marker."""

    def __init__(self, entry):
        self.entry = entry
        self.log = open(os.path.join(results_dir, entry['name'] + '.log'), 'wb')
        self.marker_seen = threading.Event()
        env = dict(os.environ, **entry.get('env', {}))
        self.started = time.monotonic()
        self.process = subprocess.Popen(entry['command'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        env=env, start_new_session=True)
        self.reader = threading.Thread(target=self.copy_output, daemon=True)
        self.reader.start()

    def copy_output(self):
        marker = self.entry.get('marker', '').encode()
        for line in self.process.stdout:
            self.log.write(line)
            self.log.flush()
            if marker and marker in line:
                self.marker_seen.set()

    def startup_ms(self):
        """Until bluetoothd has the advertisement (or the marker line, for a contender that does not advertise)."""
        def ready():
            if self.process.poll() is not None:
                raise Failure('exited with %d before it was ready' % self.process.returncode)
            if self.entry.get('advertises', True):
                return active_advertisements() > 0
            return self.marker_seen.is_set()
        wait_for(ready, 30, 'the contender to register')
        return (time.monotonic() - self.started) * 1000

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.reader.join(5)
        self.log.close()
        # The next contender must find the controller free of advertisements.
        wait_for(lambda: active_advertisements() == 0, 10, 'the advertisement to go away')


def connect():
    """Discovers the peripheral, connects (discovery stopped first) and waits for its services."""
    def find_device():
        for path, interfaces in manager.GetManagedObjects().items():
            device = interfaces.get(DEVICE)
            if device and device.get('Adapter') == central_path and str(device.get('Address')).upper() == target:
                return path
        return None
    adapter.SetDiscoveryFilter({'Transport': 'le'})
    adapter.StartDiscovery()
    try:
        path = wait_for(find_device, 30, 'the peripheral to be discovered')
    finally:
        adapter.StopDiscovery()
    device = dbus.Interface(bus.get_object('org.bluez', path), DEVICE)
    device.Connect(timeout=30)
    properties = dbus.Interface(bus.get_object('org.bluez', path), PROPERTIES)
    wait_for(lambda: properties.Get(DEVICE, 'ServicesResolved'), 30, 'services to resolve')
    return path, device


def characteristic(device_path, uuid):
    for path, interfaces in manager.GetManagedObjects().items():
        chrc = interfaces.get(CHARACTERISTIC)
        if path.startswith(device_path + '/') and chrc and str(chrc['UUID']).lower() == uuid.lower():
            return path
    raise Failure('no characteristic %s' % uuid)


def round_trips(call, count):
    """Calls `call` `count` times in a row: calls/s and p50/p99 latency in ms."""
    latencies = []
    started = time.perf_counter()
    for _ in range(count):
        before = time.perf_counter()
        call()
        latencies.append((time.perf_counter() - before) * 1000)
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {'perSecond': round(count / elapsed, 1), 'p50ms': round(statistics.median(latencies), 2),
            'p99ms': round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2)}


def notifications(notify_path, control_path, count):
    """Subscribes, asks the contender for `count` notifications through its control point, counts arrivals."""
    received = []
    loop = GLib.MainLoop()
    state = {'last': time.perf_counter()}

    def changed(interface, changed_properties, invalidated):
        if 'Value' in changed_properties:
            received.append(bytes(changed_properties['Value']))
            state['last'] = time.perf_counter()
            if len(received) >= count:
                loop.quit()

    match = bus.add_signal_receiver(changed, signal_name='PropertiesChanged', dbus_interface=PROPERTIES,
                                    path=notify_path, arg0=CHARACTERISTIC)
    notify = dbus.Interface(bus.get_object('org.bluez', notify_path), CHARACTERISTIC)
    notify.StartNotify()
    # 5.66 answers the CCCD write before the peripheral's app has its AcquireNotify socket (`ccc_write_cb`), so
    # a trigger sent at once could find the app not yet subscribed.
    time.sleep(0.5)

    def idle_check():
        # Done when nothing arrived for 5 s: what is missing by then is lost.
        if time.perf_counter() - state['last'] > 5:
            loop.quit()
            return False
        return True

    control = dbus.Interface(bus.get_object('org.bluez', control_path), CHARACTERISTIC)
    started = time.perf_counter()
    state['last'] = started
    control.WriteValue(dbus.Array(struct.pack('<I', count), signature='y'), {'type': 'request'})
    GLib.timeout_add(100, idle_check)
    loop.run()
    match.remove()
    elapsed = state['last'] - started
    try:
        notify.StopNotify()
    except dbus.DBusException:
        pass
    return {'sent': count, 'received': len(received), 'lost': count - len(received),
            'perSecond': round(len(received) / elapsed, 1) if elapsed > 0 else None}


def run(entry):
    result = {'name': entry['name'], 'label': entry['label']}
    log('starting', entry['name'])
    contender = Contender(entry)
    device_path = None
    try:
        result['startupMs'] = round(contender.startup_ms(), 1)
        device_path, device = connect()
        roles = entry['roles']
        counts = config['counts']
        for workload in entry['workloads']:
            if workload in ('read20', 'read512'):
                path = characteristic(device_path, roles['rw20' if workload == 'read20' else 'rw512'])
                chrc = dbus.Interface(bus.get_object('org.bluez', path), CHARACTERISTIC)
                result[workload] = round_trips(lambda: chrc.ReadValue({}), counts['roundTrips'])
            elif workload == 'write20':
                path = characteristic(device_path, roles['rw20'])
                chrc = dbus.Interface(bus.get_object('org.bluez', path), CHARACTERISTIC)
                value = dbus.Array(bytes(range(20)), signature='y')
                result[workload] = round_trips(lambda: chrc.WriteValue(value, {'type': 'request'}),
                                               counts['roundTrips'])
            elif workload == 'notify':
                result[workload] = notifications(characteristic(device_path, roles['notify']),
                                                 characteristic(device_path, roles['control']),
                                                 counts['notifications'])
            log(entry['name'], workload, result[workload])
        device.Disconnect()
    except (Failure, dbus.DBusException) as error:
        result['error'] = str(error)
        log(entry['name'], 'failed:', error)
    finally:
        contender.stop()
        if device_path:
            try:
                adapter.RemoveDevice(device_path)
            except dbus.DBusException:
                pass
    return result


results = {'bluez': subprocess.run(['bluetoothd', '--version'], capture_output=True, text=True).stdout.strip(),
           'counts': config['counts'], 'contenders': [run(entry) for entry in config['contenders']]}
with open(os.path.join(results_dir, 'lab-bench.json'), 'w') as out:
    json.dump(results, out, indent=2)
failed = [entry['name'] for entry in results['contenders'] if 'error' in entry]
log('done;', 'failed: ' + ', '.join(failed) if failed else 'every contender ran')
sys.exit(1 if failed else 0)
