#!/usr/bin/env python3
"""Writes the lab benchmark's contender list (Benchmarks/run-lab) for bench_central.py: what each contender
runs, how its start-up is seen, which characteristic plays which role, and which workloads it supports."""
import argparse
import json

BENCH = 'b1e7000%d-be4c-4f2a-9c1e-6d0a5e7b0c00'
BENCH_ROLES = {'rw20': BENCH % 1, 'rw512': BENCH % 2, 'notify': BENCH % 4, 'control': BENCH % 5}
EVERYTHING = ['read20', 'read512', 'write20', 'notify']

parser = argparse.ArgumentParser()
for option in ('--out', '--c', '--lib', '--blemu', '--profile'):
    parser.add_argument(option, required=True)
parser.add_argument('--example', help='a directory holding example-gatt-server and example-advertisement')
parser.add_argument('--round-trips', type=int, required=True)
parser.add_argument('--notifications', type=int, required=True)
args = parser.parse_args()

contenders = [
    # The limit: C libdbus. Its NotifyAcquired makes bluetoothd notify through a socket.
    {'name': 'c', 'label': 'C', 'command': [args.c], 'roles': BENCH_ROLES, 'workloads': EVERYTHING},
    {'name': 'c-properties', 'label': 'C PropertiesChanged', 'command': [args.c, '--no-acquire'],
     'roles': BENCH_ROLES, 'workloads': ['notify']},
    {'name': 'blemu-lib', 'label': 'blemu lib', 'command': [args.lib, args.profile], 'roles': BENCH_ROLES,
     'workloads': EVERYTHING},
    {'name': 'blemu-lib-properties', 'label': 'blemu lib PropertiesChanged', 'command': [args.lib, args.profile],
     'env': {'BLEMU_BENCH_NOTIFY': 'properties'}, 'roles': BENCH_ROLES, 'workloads': ['notify']},
    # `blemu run` serves the control point as a plain value: no notification trigger.
    {'name': 'blemu-cli', 'label': 'blemu run', 'command': [args.blemu, 'run', args.profile, '--adapter', 'hci0'],
     'roles': BENCH_ROLES, 'workloads': ['read20', 'read512', 'write20']},
]
if args.example:
    # example-gatt-server does not advertise: example-advertisement runs beside it, as BlueZ's docs pair them.
    # Its test characteristic (...def1) is read/write; it notifies only from timers, so no notification figure.
    example = "/usr/bin/python3 -u %s/example-advertisement & exec /usr/bin/python3 -u %s/example-gatt-server"
    contenders.append({
        'name': 'example-gatt-server', 'label': 'example-gatt-server',
        'command': ['/bin/sh', '-c', example % (args.example, args.example)], 'advertises': False,
        'marker': 'GATT application registered',
        'roles': {'rw20': '12345678-1234-5678-1234-56789abcdef1'}, 'workloads': ['read20', 'write20']})

with open(args.out, 'w') as out:
    json.dump({'counts': {'roundTrips': args.round_trips, 'notifications': args.notifications},
               'contenders': contenders}, out, indent=2)
