#!/usr/bin/env python3
"""Prints the soak's figures (Benchmarks/run-soak) from soak.json and judges the promises that are not figures:
exits 1 when an acknowledged write was lost, a request went unanswered while bluetoothd was alive and well, a blemu
stopped by SIGTERM had not answered every request it received, or the central could not find the peripheral again
after a disturbance. Rates and notification losses are reported, never judged (a loaded host may be slow)."""
import json
import re
import statistics
import sys

soak = json.load(open(sys.argv[1]))
requests, writes, notes = soak['requests'], soak['writes'], soak['notifications']
reconnects = [s for s in soak['reconnectSeconds'] if s is not None]
failed_reconnects = len(soak['reconnectSeconds']) - len(reconnects)


def listed(counts):
    return ', '.join('%s %d' % (name, n) for name, n in sorted(counts.items())) or 'none'


print('soak on %s: %d s, a disturbance %d s after each recovery (%s)' % (
    soak['bluez'], soak['seconds'], soak['every'], listed(soak['disturbances'])))
print('  central requests: %d sent, %d answered (%s ATT errors), %d failed with the link down, %d unanswered' % (
    requests['sent'], requests['answered'], sum(requests['attErrors'].values()) or 'no',
    sum(requests['linkDown'].values()), sum(requests['unanswered'].values())))
if requests.get('droppedWithObject'):
    print('    dropped by the central\'s bluetoothd with the characteristic it removed under them (never sent to the '
          'peripheral; docs/bluez.md): %d' % requests['droppedWithObject'])
for kind in ('attErrors', 'linkDown', 'unanswered'):
    if requests[kind]:
        print('    %s: %s' % (kind, listed(requests[kind])))
print('  acknowledged writes: %d; checked after each disturbance %d times; lost: %d' % (
    writes['acknowledged'], writes['checks'], writes['lost']))
print('  notifications: %d received in %d subscriptions, %d lost inside a subscription, %d out of order' % (
    notes['received'], notes['sessions'], notes['lost'], notes['outOfOrder']))
for gap in notes.get('gaps', []):
    print('    gap at %.0f s: %d, then %d' % (gap['at'], gap['after'], gap['next']))
if reconnects:
    print('  back to work after a disturbance: median %.1f s, max %.1f s; never: %d' % (
        statistics.median(reconnects), max(reconnects), failed_reconnects))
for death in soak.get('bluetoothdDeaths', []):
    print('  bluetoothd died on its own at %.0f s, after %s (started again); its last lines: %s; kernel: %s' % (
        death['at'], death['after'], ' | '.join(death['lastLines']), ' | '.join(death['kernel']) or 'nothing'))


def answered(instance):
    """The requests an instance answered, from its counters before SIGKILL or its `stopped:` line; None if unknown."""
    if instance.get('ended') == 'SIGKILL':
        return (instance.get('countersBeforeKill') or {}).get('answered')
    numbers = [int(n) for n in re.findall(r'\d+', instance.get('final') or '')[:2]]
    return numbers[1] if len(numbers) == 2 else None


# What each request left behind in blemu's resident set: reported, never judged (the allocator's pools and the first
# requests' caches grow it too, so a short instance says little; ResponderMemoryTests holds the bound).
grown, served = 0, 0
for instance in soak['blemu']:
    start, end, count = instance.get('rssStartKiB'), instance.get('rssEndKiB'), answered(instance)
    if start is not None and end is not None and count:
        grown += end - start
        served += count
if served >= 10000:
    print('  blemu resident set: %+d KiB over %d answered requests, %+.0f KiB per 10,000 (%+.1f bytes a request)' % (
        grown, served, grown * 10000 / served, grown * 1024 / served))
elif served:
    # Under TCG a central makes a few requests a second: a short soak's growth is the allocator's, not a leak's.
    print('  blemu resident set: %+d KiB over %d answered requests (too few to tell a leak a request)' % (
        grown, served))
problems = []
if soak.get('failure'):
    problems.append('the soak stopped early: %s' % soak['failure'])
for instance in soak['blemu']:
    if instance.get('ended') == 'SIGKILL':
        counters = instance.get('countersBeforeKill') or {}
        print('  blemu %d: killed (SIGKILL); just before: %s requests, %s answered' % (
            instance['instance'], counters.get('requests', '?'), counters.get('answered', '?')))
    elif instance.get('ended') != 'SIGTERM':
        print('  blemu %d: %s, exit %s' % (instance['instance'], instance.get('ended'), instance.get('exitCode')))
    else:
        final = instance.get('final') or ''
        print('  blemu %d: %s, exit %s; %s' % (instance['instance'], instance.get('ended'),
                                             instance.get('exitCode'), final or 'no final line'))
        numbers = [int(n) for n in re.findall(r'\d+', final)[:2]]
        if len(numbers) != 2 or numbers[0] != numbers[1] or instance.get('exitCode') != 0:
            problems.append('blemu %d did not stop cleanly with every request answered: %r' % (
                instance['instance'], final))
if writes['lost']:
    problems.append('%d acknowledged writes lost: %s' % (writes['lost'], writes['lostDetail']))
for hang in soak.get('bluetoothdHangs', []):
    print('  bluetoothd stopped answering at %.0f s, after %s (killed and started again; stall-N.txt says what '
          'each process was doing)' % (hang['at'], hang['after']))
# A request the central's own bluetoothd never answered: blemu's silence would have come back as an ATT error after
# bluetoothd's own timeout, so this is bluetoothd hanging, which is a failure unless the soak saw it hang or die.
if requests['unanswered'] and not soak.get('bluetoothdHangs') and not soak.get('bluetoothdDeaths'):
    problems.append('unanswered requests: %s' % listed(requests['unanswered']))
if failed_reconnects:
    problems.append('the central could not find the peripheral again %d times' % failed_reconnects)
for problem in problems:
    print('run-soak: FAIL: ' + problem)
sys.exit(1 if problems else 0)
