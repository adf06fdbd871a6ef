#!/usr/bin/python3
"""The soak's driver (Benchmarks/run-soak), run inside the lab VM by `blemu lab run`.

    soak_central.py BLEMU PROFILE SECONDS EVERY

Runs `blemu run PROFILE --restore-id soak` on the peripheral controller and, from the central controller through
bluetoothd's own client API, reads `sample`, writes a rising sequence number to `written` (Write Requests) and
stays subscribed to `stream`, as fast as one central can, for SECONDS. Meanwhile, EVERY seconds after the central
is back from the last disturbance (or has given up on it), a second thread disturbs the world in turn: bluetoothd
is killed and started again with its own command line, the peripheral's adapter is powered off and on (btmgmt),
and blemu is killed with SIGKILL and started again with the same --restore-id. After each disturbance the central
finds its way back (discovers, connects, resubscribes) and checks that `written` still holds at least the last
sequence number it saw acknowledged.

Writes $BLEMU_LAB_RESULTS/soak.json: the central's requests and how each ended, acknowledged writes and how many
were lost, notifications received and lost inside each subscription (a gap in the counter), and each blemu
instance's own request and answer counts (from `blemu ctl counters` before a kill, from its final log line after
SIGTERM). A bluetoothd that dies or stops answering on its own is recorded (its last log lines and the kernel's
line; a /proc snapshot of every process in stall-N.txt) and started again, so the soak goes on and says so. Exits 1
only when the soak could not run (blemu never advertised, the central never connected); soak_report.py judges.
"""
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

DEVICE = 'org.bluez.Device1'
CHARACTERISTIC = 'org.bluez.GattCharacteristic1'
PROPERTIES = 'org.freedesktop.DBus.Properties'
UUIDS = {name: '5a0a000%d-6b1e-4c2f-9a57-3e2c1d0b4f61' % n for n, name in ((1, 'sample'), (2, 'written'),
                                                                           (3, 'stream'))}
DISTURBANCES = ['restart-bluetoothd', 'power-cycle', 'kill-blemu']
# An error from the central's own stack while the link or bluetoothd is down: no request reached blemu.
LINK_DOWN = {'org.bluez.Error.NotConnected', 'org.bluez.Error.Failed', 'org.bluez.Error.InProgress',
             'org.freedesktop.DBus.Error.UnknownObject', 'org.freedesktop.DBus.Error.UnknownMethod',
             'org.freedesktop.DBus.Error.ServiceUnknown', 'org.freedesktop.DBus.Error.NameHasNoOwner',
             'org.freedesktop.DBus.Error.Disconnected', 'org.freedesktop.DBus.Error.Spawn.ChildExited'}
# What the bus answers while no bluetoothd owns org.bluez (Spawn.ChildExited: the bus tried to start one itself).
NO_BLUETOOTHD = {'org.freedesktop.DBus.Error.ServiceUnknown', 'org.freedesktop.DBus.Error.NameHasNoOwner',
                 'org.freedesktop.DBus.Error.Spawn.ChildExited'}

blemu, profile, seconds, every = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
results_dir = os.environ['BLEMU_LAB_RESULTS']
peripheral = os.environ['BLEMU_LAB_PERIPHERAL'].split(',')[0]
central_path = '/org/bluez/' + os.environ['BLEMU_LAB_CENTRAL']
target = os.environ['BLEMU_LAB_PERIPHERAL_ADDRESS'].split(',')[0].upper()
control = '/run/blemu-soak.sock'
lock = threading.Lock()


def resident_kib(pid):
    """The process's resident set in KiB (/proc/PID/status VmRSS), or None once it is gone."""
    try:
        with open('/proc/%d/status' % pid) as status:
            for line in status:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def log(*parts):
    print('soak: %7.1f' % (time.monotonic() - started), *parts, flush=True)


class Blemu:
    """The running `blemu run`, its instances numbered from 1, each with its own log and event log."""

    def __init__(self):
        self.instances = []
        self.process = None

    def start(self):
        number = len(self.instances) + 1
        name = os.path.join(results_dir, 'blemu-%d' % number)
        output = open(name + '.log', 'wb')
        # The state lives on the VM's tmpfs, as on a real machine's disk: the results share is 9p, where every
        # save's fsync costs tens of milliseconds under TCG.
        self.process = subprocess.Popen(
            [blemu, 'run', profile, '--adapter', peripheral, '--control', control, '--events', name + '.jsonl',
             '--restore-id', 'soak', '--state-dir', '/run/blemu-soak-state'], stdin=subprocess.DEVNULL,
            stdout=output, stderr=subprocess.STDOUT)
        output.close()
        self.instances.append({'instance': number, 'log': name + '.log'})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.instances[-1].update(ended='exited before advertising', exitCode=self.process.returncode)
                raise SystemExit('blemu run exited %d before advertising: see %s.log' % (self.process.returncode,
                                                                                          name))
            with open(name + '.log', errors='replace') as text:
                if any(line.startswith('advertising "') for line in text):
                    # Its resident set once serving: the end's less this, over the requests it answered, is what
                    # each request left behind (a leak of 100 bytes per request shows as 1 MB per 10,000).
                    self.instances[-1]['rssStartKiB'] = resident_kib(self.process.pid)
                    return
            time.sleep(0.1)
        raise SystemExit('blemu run did not advertise in 30 s: see %s.log' % name)

    def counters(self):
        answer = subprocess.run([blemu, 'ctl', control, 'counters'], capture_output=True, text=True, timeout=20)
        return json.loads(answer.stdout)['counters'] if answer.returncode == 0 else None

    def end(self, how):
        """Ends the running instance by SIGKILL or SIGTERM and records what it counted."""
        instance = self.instances[-1]
        instance['ended'] = how
        instance['rssEndKiB'] = resident_kib(self.process.pid)
        if how == 'SIGKILL':
            # Its own count just before: a request may be in flight between the two, and dies with it.
            instance['countersBeforeKill'] = self.counters()
            self.process.kill()
        else:
            self.process.send_signal(signal.SIGTERM)
        instance['exitCode'] = self.process.wait(30)
        if how == 'SIGTERM':
            # `stopped: N requests, M answered, ...`: its count after answering everything outstanding.
            with open(instance['log'], errors='replace') as text:
                final = [line.strip() for line in text if line.startswith('stopped: ')]
            instance['final'] = final[-1] if final else None


def bluetoothd_pid():
    """The live bluetoothd's pid, or None. A dead one the soak started stays a zombie until Python reaps it, so the
    state counts, not the name alone."""
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/stat' % entry) as stat:
                    # pid (comm) state ...: comm may hold spaces, so split after its closing parenthesis.
                    text = stat.read()
                if text[text.index('(') + 1:text.rindex(')')] == 'bluetoothd' and text[text.rindex(')') + 2] != 'Z':
                    return int(entry)
            except (OSError, ValueError, IndexError):
                pass
    return None


def snapshot(reason):
    """What every process of the VM is doing, for a stall nobody expected: state, kernel wait channel and stack."""
    snapshot.count = getattr(snapshot, 'count', 0) + 1
    if snapshot.count > 3:
        return
    lines = ['%.1f s: %s' % (time.monotonic() - started, reason)]
    for entry in sorted(os.listdir('/proc'), key=lambda e: int(e) if e.isdigit() else 0):
        if not entry.isdigit():
            continue
        facts = []
        for name in ('comm', 'wchan', 'syscall', 'stack'):
            try:
                with open('/proc/%s/%s' % (entry, name)) as text:
                    facts.append(text.read().strip().replace('\n', ' | '))
            except OSError as error:
                facts.append('(%s)' % error.strerror)
        try:
            with open('/proc/%s/status' % entry) as text:
                state = [line.split(':', 1)[1].strip() for line in text if line.startswith('State:')]
        except OSError:
            state = ['?']
        lines.append('%s %s [%s] wchan=%s syscall=%s stack=%s' % (entry, facts[0], state[0] if state else '?',
                                                                   facts[1], facts[2], facts[3]))
    with open(os.path.join(results_dir, 'stall-%d.txt' % snapshot.count), 'w') as out:
        out.write('\n'.join(lines) + '\n')


def wait_until(predicate, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


class Bluetoothd:
    """bluetoothd as the lab started it: its command line, read once from /proc, to start it again; each start's
    output goes to bluetoothd-N.log. A bluetoothd that died on its own is recorded (with the kernel's last words)
    and started again, so the soak goes on and says so."""

    def __init__(self):
        pid = bluetoothd_pid()
        with open('/proc/%d/cmdline' % pid, 'rb') as text:
            self.command = [part.decode() for part in text.read().split(b'\0') if part]
        self.starts = 0
        self.deaths = []
        self.hangs = []

    def start(self):
        self.starts += 1
        output = open(os.path.join(results_dir, 'bluetoothd-%d.log' % self.starts), 'wb')
        subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                         start_new_session=True)
        output.close()

    def restart(self):
        pid = bluetoothd_pid()
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            if not wait_until(lambda: not os.path.exists('/proc/%d' % pid), 10):
                os.kill(pid, signal.SIGKILL)
        self.start()

    def kill_hung(self, after):
        """A bluetoothd on the bus that answers nothing (seen once on 5.66 after a blemu kill): recorded with what
        every process was doing (stall-N.txt), killed and started again."""
        pid = bluetoothd_pid()
        if pid is None:
            return self.revive_if_dead(after)
        snapshot('bluetoothd %d answers nothing' % pid)
        self.hangs.append({'at': round(time.monotonic() - started, 1), 'after': after})
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not os.path.exists('/proc/%d' % pid), 10)
        self.start()
        return True

    def revive_if_dead(self, after):
        """True when bluetoothd had died on its own (and was started again, which the soak's log says)."""
        if bluetoothd_pid() is not None:
            return False
        output = 'bluetoothd.log' if self.starts == 0 else 'bluetoothd-%d.log' % self.starts
        try:
            with open(os.path.join(results_dir, output), errors='replace') as text:
                last = text.read().splitlines()[-3:]
        except OSError:
            last = []
        kernel = subprocess.run(['dmesg'], capture_output=True, text=True).stdout.splitlines()
        self.deaths.append({'at': round(time.monotonic() - started, 1), 'after': after, 'log': output,
                            'lastLines': last, 'kernel': [k for k in kernel if 'bluetoothd' in k][-3:]})
        self.start()
        log('bluetoothd died on its own after', after, '- started again:', self.deaths[-1])
        return True


def power_cycle():
    index = peripheral[3:]
    for state in ('off', 'on'):
        subprocess.run(['btmgmt', '--index', index, 'power', state], capture_output=True, timeout=20)


class Disturber(threading.Thread):
    """`every` seconds after the central is back from the last disturbance, the next; the main thread learns of each
    through `happened` and says it is back through `recovered`. Counting from the disturbance instead once let a
    loaded host's 10-15 s recoveries be overtaken by the next one again and again: the central never got back, and
    the soak measured its own pace, not blemu."""

    def __init__(self, peripheral_process, daemon):
        super().__init__(daemon=True)
        self.blemu = peripheral_process
        self.bluetoothd = daemon
        self.last = None
        self.failure = None
        self.count = {name: 0 for name in DISTURBANCES}
        self.happened = threading.Event()
        self.recovered = threading.Event()
        self.recovered.set()
        self.stop = threading.Event()
        self.last_at = time.monotonic()

    def run(self):
        # A soak whose disturbances stopped is no soak: whatever ends this thread early is its failure, which ends
        # the soak and fails its report (a traceback alone once went unnoticed in a passing 600 s run).
        try:
            self.disturb()
        except BaseException as error:  # pylint: disable=broad-except
            log('the disturbing thread died:', traceback.format_exc())
            self.failure = 'the disturbing thread died: %r' % error

    def disturb(self):
        turn = 0
        while True:
            while not self.recovered.wait(0.5):
                if self.stop.is_set():
                    return
            if self.stop.wait(every):
                return
            kind = DISTURBANCES[turn % len(DISTURBANCES)]
            turn += 1
            log('disturbance:', kind)
            self.last_at = time.monotonic()
            with lock:
                self.last = kind
                if kind == 'restart-bluetoothd':
                    self.bluetoothd.restart()
                elif kind == 'power-cycle':
                    power_cycle()
                else:
                    self.blemu.end('SIGKILL')
                    # bluetoothd 5.66 was seen to die as it removed the killed app's services (proxy_removed_cb):
                    # the next blemu needs a live one.
                    time.sleep(1)
                    self.bluetoothd.revive_if_dead(after=kind)
                    try:
                        try:
                            self.blemu.start()
                        except SystemExit:
                            # A bluetoothd that died a moment later than the check above: blemu exits 69 without
                            # one; start it again on a live one.
                            if not self.bluetoothd.revive_if_dead(after=kind):
                                raise
                            self.blemu.start()
                    except SystemExit as error:
                        self.failure = str(error)
                        log('the soak stops:', error)
                        self.stop.set()
                self.count[kind] += 1
                self.recovered.clear()
                self.happened.set()


class Central:
    """One central on bluetoothd's client API, counting every request's end and every notification."""

    def __init__(self):
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        self.bus = dbus.SystemBus()
        self.context = GLib.MainContext.default()
        self.requests = {'sent': 0, 'answered': 0, 'attErrors': {}, 'linkDown': {}, 'unanswered': {},
                         'droppedWithObject': 0}
        self.writes = {'acknowledged': 0, 'checks': 0, 'lost': 0, 'lostDetail': []}
        self.notifications = {'sessions': 0, 'received': 0, 'lost': 0, 'outOfOrder': 0}
        self.reconnects = []
        self.sequence = 0
        self.last_acknowledged = 0
        self.previous = None
        self.stream_path = None
        # One receiver for the central's whole life, filtered by the stream's current path. With a match removed
        # and added again on each re-subscription, the first 10-minute runs counted values as lost that btmon showed
        # reaching the central's controller while it re-subscribed.
        self.bus.add_signal_receiver(self.changed, signal_name='PropertiesChanged', dbus_interface=PROPERTIES,
                                     arg0=CHARACTERISTIC, path_keyword='path')
        # Characteristics bluetoothd took off the bus, counted by path: a request pending on one that goes is never
        # answered (`request` says why).
        self.removals = {}
        self.bus.add_signal_receiver(self.removed, signal_name='InterfacesRemoved',
                                     dbus_interface='org.freedesktop.DBus.ObjectManager', bus_name='org.bluez')
        self.characteristics = None

    def pump(self):
        while self.context.iteration(False):
            pass

    def objects(self):
        manager = dbus.Interface(self.bus.get_object('org.bluez', '/'), 'org.freedesktop.DBus.ObjectManager')
        return manager.GetManagedObjects()

    def device_path(self):
        for path, interfaces in self.objects().items():
            device = interfaces.get(DEVICE)
            if device and device.get('Adapter') == central_path and str(device.get('Address')).upper() == target:
                return path
        return None

    def establish(self, limit=90):
        """Connected, resolved and subscribed, from whatever state the world left: True, or False after `limit`."""
        begun = time.monotonic()
        revivals = 0
        while time.monotonic() - begun < limit:
            try:
                if self.try_establish():
                    self.reconnects.append(round(time.monotonic() - begun, 2))
                    return True
            except dbus.DBusException as error:
                log('establishing:', error.get_dbus_name(), error.get_dbus_message())
                if error.get_dbus_name() == 'org.freedesktop.DBus.Error.NoReply':
                    # Our own bluetoothd did not answer in 25 s: it hangs (an app's silence would have been
                    # answered by bluetoothd with an ATT error).
                    with lock:
                        daemon.kill_hung(after=disturber.last)
                elif error.get_dbus_name() in NO_BLUETOOTHD and revivals < 3:
                    # bluetoothd 5.82 once segfaulted while the central was on its way back from a power cycle:
                    # waiting out the whole limit for it would count a BlueZ crash as blemu never coming back. A
                    # few tries: one that dies as it starts is not started every 0.5 s for the whole limit.
                    with lock:
                        if daemon.revive_if_dead(after=disturber.last):
                            revivals += 1
            time.sleep(0.5)
        self.reconnects.append(None)
        return False

    def try_establish(self):
        self.characteristics = None
        path = self.device_path()
        connected = False
        if path is not None:
            properties = dbus.Interface(self.bus.get_object('org.bluez', path), PROPERTIES)
            connected = bool(properties.Get(DEVICE, 'Connected'))
        if not connected:
            adapter = dbus.Interface(self.bus.get_object('org.bluez', central_path), 'org.bluez.Adapter1')
            if path is not None:
                # A cached object may outlive the peripheral's advertising: find it afresh.
                adapter.RemoveDevice(path)
            adapter.SetDiscoveryFilter({'Transport': 'le'})
            adapter.StartDiscovery()
            try:
                if not wait_until(lambda: self.device_path() is not None, 30):
                    return False
            finally:
                adapter.StopDiscovery()
            path = self.device_path()
            dbus.Interface(self.bus.get_object('org.bluez', path), DEVICE).Connect(timeout=30)
        properties = dbus.Interface(self.bus.get_object('org.bluez', path), PROPERTIES)
        if not wait_until(lambda: properties.Get(DEVICE, 'ServicesResolved'), 30):
            return False
        found = {}
        for object_path, interfaces in self.objects().items():
            chrc = interfaces.get(CHARACTERISTIC)
            if object_path.startswith(path + '/') and chrc:
                for name, uuid in UUIDS.items():
                    if str(chrc['UUID']).lower() == uuid:
                        found[name] = dbus.Interface(self.bus.get_object('org.bluez', object_path), CHARACTERISTIC)
        if len(found) < len(UUIDS):
            return False
        self.characteristics = found
        self.check_written()
        self.previous = None
        self.stream_path = found['stream'].object_path
        found['stream'].StartNotify()
        self.notifications['sessions'] += 1
        return True

    def check_written(self):
        """`written` must hold at least the last acknowledged sequence number (one sent but not acknowledged may
        have been stored too)."""
        value = struct.unpack('<I', bytes(self.characteristics['written'].ReadValue({})))[0]
        self.writes['checks'] += 1
        if value < self.last_acknowledged:
            self.writes['lost'] += 1
            self.writes['lostDetail'].append({'acknowledged': self.last_acknowledged, 'read': value})
            log('acknowledged write lost: read', value, 'after', self.last_acknowledged, 'was acknowledged')
        self.sequence = max(self.sequence, value)

    def changed(self, interface, changed_properties, invalidated, path=None):
        if 'Value' not in changed_properties or path != self.stream_path:
            return
        value = struct.unpack('<I', bytes(changed_properties['Value'])[:4])[0]
        self.notifications['received'] += 1
        if self.previous is not None:
            if value > self.previous + 1:
                self.notifications['lost'] += value - self.previous - 1
                self.notifications.setdefault('gaps', []).append(
                    {'at': round(time.monotonic() - started, 1), 'after': self.previous, 'next': value})
            elif value <= self.previous:
                self.notifications['outOfOrder'] += 1
        self.previous = value

    def removed(self, path, interfaces):
        if CHARACTERISTIC in interfaces:
            self.removals[str(path)] = self.removals.get(str(path), 0) + 1

    def request(self, characteristic, call):
        """One request to `characteristic` (a proxy): 'ok' (answered with success), 'refused' (answered with an ATT
        error) or 'down' (the link or bluetoothd was gone, or no answer came)."""
        self.requests['sent'] += 1
        path = str(characteristic.object_path)
        self.pump()
        removals = self.removals.get(path, 0)
        try:
            call()
            self.requests['answered'] += 1
            return 'ok'
        except dbus.DBusException as error:
            name = error.get_dbus_name()
            message = error.get_dbus_message() or ''
            self.pump()
            timed_out = name == 'org.freedesktop.DBus.Error.NoReply' and 'disconnected' not in message.lower()
            if timed_out and self.removals.get(path, 0) > removals:
                # bluetoothd took the characteristic off the bus while the call waited (a Service Changed after blemu
                # was killed: the characteristic's service is rediscovered) and dropped the call unanswered: 5.82
                # src/gatt-client.c `unregister_characteristic` cancels the pending operation, whose D-Bus messages
                # `async_dbus_op_free` unrefs without a reply. Seen in a CI soak on 5.82, the ATT request never sent.
                # The central's bluetoothd lost it, not the peripheral: counted apart, never as unanswered.
                self.requests['droppedWithObject'] += 1
                return 'down'
            if timed_out:
                kind = 'unanswered'
                snapshot('unanswered: ' + message)
            elif 'ATT error' in message or name not in LINK_DOWN | {'org.freedesktop.DBus.Error.NoReply'}:
                # An ATT error the peripheral's side answered: bluetoothd's name for it (org.bluez.Error.NotPermitted)
                # or org.bluez.Error.Failed "Operation failed with ATT error: 0x0e".
                kind = 'attErrors'
            else:
                kind = 'linkDown'
            key = name + (': ' + message if message else '')
            self.requests[kind][key] = self.requests[kind].get(key, 0) + 1
            if kind == 'attErrors':
                self.requests['answered'] += 1
                return 'refused'
            return 'down'

    def work(self):
        """One read and one write; False when the link went away. Only a write answered with success counts as
        acknowledged: one refused with an ATT error promised nothing."""
        chrcs = self.characteristics
        if self.request(chrcs['sample'], lambda: chrcs['sample'].ReadValue({}, timeout=35)) == 'down':
            return False
        self.sequence += 1
        value = dbus.Array(struct.pack('<I', self.sequence), signature='y')
        outcome = self.request(
            chrcs['written'], lambda: chrcs['written'].WriteValue(value, {'type': 'request'}, timeout=35))
        if outcome == 'ok':
            self.writes['acknowledged'] += 1
            self.last_acknowledged = self.sequence
        elif outcome == 'refused':
            self.writes['refused'] = self.writes.get('refused', 0) + 1
        return outcome != 'down'


started = time.monotonic()
peripheral_process = Blemu()
peripheral_process.start()
daemon = Bluetoothd()
disturber = Disturber(peripheral_process, daemon)
central = Central()
if not central.establish():
    peripheral_process.end('SIGTERM')
    raise SystemExit('the central never connected to the peripheral')
disturber.start()
log('connected; soaking for %d s, a disturbance %d s after each recovery' % (seconds, every))
while time.monotonic() - started < seconds and disturber.failure is None and disturber.is_alive():
    central.pump()
    healthy = central.work()
    central.pump()
    if disturber.happened.is_set() or not healthy:
        # Whatever happened, wait for the disturbance to finish, then find the way back and check `written`.
        with lock:
            disturber.happened.clear()
            daemon.revive_if_dead(after=disturber.last)
        if not central.establish():
            log('could not find the peripheral again within 90 s')
            with lock:
                daemon.revive_if_dead(after=disturber.last)
        disturber.recovered.set()
if disturber.failure is None and not disturber.is_alive():
    disturber.failure = 'the disturbing thread ended after %d s of %d' % (time.monotonic() - started, seconds)
disturber.stop.set()
disturber.join(60)
# The disturbances must have kept coming: one `every` seconds after each recovery, and a recovery gives up after
# 90 s (`establish`), so a longer quiet spell at the end means the disturber stopped disturbing.
quiet = time.monotonic() - disturber.last_at
if disturber.failure is None and quiet > every + 90 + 30:
    disturber.failure = 'no disturbance in the last %d s of the soak' % quiet
# The last check of `written`, on the way back from the last disturbance if there was one.
if not central.establish():
    log('could not find the peripheral again within 90 s for the last check')
peripheral_process.end('SIGTERM')

report = {
    'bluez': subprocess.run(['bluetoothd', '--version'], capture_output=True, text=True).stdout.strip(),
    'seconds': seconds, 'every': every, 'disturbances': disturber.count,
    'requests': central.requests, 'writes': central.writes, 'notifications': central.notifications,
    'reconnectSeconds': central.reconnects, 'blemu': peripheral_process.instances,
    'bluetoothdDeaths': daemon.deaths, 'bluetoothdHangs': daemon.hangs, 'failure': disturber.failure,
}
with open(os.path.join(results_dir, 'soak.json'), 'w') as out:
    json.dump(report, out, indent=2)
log('done:', json.dumps({k: report[k] for k in ('disturbances', 'requests', 'writes', 'notifications')}))
