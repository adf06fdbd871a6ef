#!/usr/bin/env python3
"""Prints the lab benchmark's table (Benchmarks/run-lab) from lab-bench.json: each figure, and blemu's ratios
against the C limit and BlueZ's own example-gatt-server."""
import json
import sys

results = json.load(open(sys.argv[1]))
contenders = results['contenders']
by_name = {c['name']: c for c in contenders}


def figure(contender, key, field):
    value = contender.get(key)
    if key == 'startupMs':
        return value
    return value.get(field) if isinstance(value, dict) else None


rows = [
    ('start-up to advertising (ms)', 'startupMs', None),
    ('read 20 B (calls/s)', 'read20', 'perSecond'),
    ('read 20 B p50/p99 (ms)', 'read20', 'p50ms'),
    ('read 512 B (calls/s)', 'read512', 'perSecond'),
    ('write 20 B (calls/s)', 'write20', 'perSecond'),
    ('write 20 B p50/p99 (ms)', 'write20', 'p50ms'),
    ('notifications/s', 'notify', 'perSecond'),
    ('notifications lost', 'notify', 'lost'),
]


def cell(contender, key, field):
    if 'error' in contender and contender.get(key) is None:
        return 'failed'
    value = figure(contender, key, field)
    if value is None:
        return 'n/a'
    if field in ('p50ms',):
        return '%s/%s' % (contender[key]['p50ms'], contender[key]['p99ms'])
    return '{:,}'.format(value) if isinstance(value, int) else '{:,.1f}'.format(value)


print('Lab benchmark: %s, %d round trips, %d notifications per contender' % (
    results['bluez'], results['counts']['roundTrips'], results['counts']['notifications']))
header = ['workload'] + [c['label'] for c in contenders]
table = [header] + [[title] + [cell(c, key, field) for c in contenders] for title, key, field in rows]
widths = [max(len(row[i]) for row in table) for i in range(len(header))]
for index, row in enumerate(table):
    print('| ' + ' | '.join(text.ljust(width) for text, width in zip(row, widths)) + ' |')
    if index == 0:
        print('|' + '|'.join('-' * (width + 2) for width in widths) + '|')

ratios = [('blemu-lib', 'c'), ('blemu-lib-properties', 'c-properties'), ('blemu-cli', 'example-gatt-server'),
          ('blemu-lib', 'example-gatt-server')]
print()
for ours, theirs in ratios:
    if ours not in by_name or theirs not in by_name:
        continue
    parts = []
    for title, key, field in rows:
        if field in (None, 'p50ms', 'lost'):
            continue
        a, b = figure(by_name[ours], key, field), figure(by_name[theirs], key, field)
        if a and b:
            parts.append('%s %.0f%%' % (title.split(' (')[0], 100 * a / b))
    if parts:
        print('%s / %s: %s' % (by_name[ours]['label'], by_name[theirs]['label'], ', '.join(parts)))
startups = [(c['label'], c['startupMs']) for c in contenders if c.get('startupMs') is not None]
if startups:
    print('start-up (ms, lower is better): ' + ', '.join('%s %.1f' % pair for pair in startups))
failed = [c['name'] + ': ' + c['error'] for c in contenders if 'error' in c]
for line in failed:
    print('FAILED ' + line)
