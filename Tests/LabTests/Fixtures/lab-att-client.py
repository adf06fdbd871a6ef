# A raw ATT client for the lab's ATT scenario (Tests/LabTests/ATTScenario.swift), for the requests gatttool cannot
# send: a Read Blob at a chosen offset, and a reliable write across two handles (Prepare Write on each, then one
# Execute Write). It speaks ATT on an L2CAP LE socket (fixed channel 4) from the central's adapter, independently of
# bluetoothd, and prints one line per request with the exact ATT error code.
#
#   lab-att-client.py SOURCE-ADDRESS PERIPHERAL-ADDRESS OPERATION...
#     blob:HANDLE:OFFSET                 Read Blob Request
#     read:HANDLE                        Read Request
#     write:HANDLE:HEX                   Write Request
#     command:HANDLE:HEX                 Write Command (no answer: prints `sent`)
#     prepare:HANDLE:OFFSET:HEX          Prepare Write Request (queued until execute)
#     execute:FLAGS                      Execute Write Request (1 writes the queue, 0 cancels it)
#     pause:SECONDS                      wait, on the same connection (prints `paused`)
#
# Every line: `OPERATION -> ok HEX` (a read's value, a prepared part's echoed value) or `OPERATION -> error 0xNN handle 0xHHHH`. Exits 1 on a transport failure,
# with the reason on stderr. Every receive has a time limit.
import ctypes
import os
import socket
import struct
import sys
import time

AF_BLUETOOTH, BTPROTO_L2CAP, ATT_CID, BDADDR_LE_PUBLIC = 31, 0, 4, 1
ERROR_RSP = 0x01
REQUESTS_TO_REFUSE = {0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20}


def fail(reason):
    print(reason, file=sys.stderr, flush=True)
    sys.exit(1)


def sockaddr(address):
    # struct sockaddr_l2: family, psm, bdaddr (little endian), cid, bdaddr_type; Python's own tuple has no cid.
    bdaddr = bytes(reversed(bytes.fromhex(address.replace(':', ''))))
    return struct.pack('<HH6sHBx', AF_BLUETOOTH, 0, bdaddr, ATT_CID, BDADDR_LE_PUBLIC)


def connect(source, target):
    sock = socket.socket(AF_BLUETOOTH, socket.SOCK_SEQPACKET, BTPROTO_L2CAP)
    libc = ctypes.CDLL(None, use_errno=True)
    for call, address in ((libc.bind, source), (libc.connect, target)):
        raw = sockaddr(address)
        if call(sock.fileno(), raw, len(raw)) != 0:
            fail('%s %s: %s' % (call.__name__, address, os.strerror(ctypes.get_errno())))
    sock.settimeout(10)
    return sock


def transact(sock, pdu, answer_opcode):
    sock.send(pdu)
    while True:
        try:
            reply = sock.recv(600)
        except socket.timeout:
            fail('no answer in 10 s to opcode 0x%02x' % pdu[0])
        if not reply:
            fail('disconnected waiting for an answer to opcode 0x%02x' % pdu[0])
        opcode = reply[0]
        if opcode in REQUESTS_TO_REFUSE:
            # The peripheral's bluetoothd discovers our (empty) GATT server: refuse, Request Not Supported.
            sock.send(struct.pack('<BBHB', ERROR_RSP, opcode, 0, 0x06))
            continue
        if opcode == ERROR_RSP and len(reply) >= 5 and reply[1] == pdu[0]:
            _, _, handle, code = struct.unpack('<BBHB', reply[:5])
            return 'error 0x%02x handle 0x%04x' % (code, handle)
        if opcode == answer_opcode:
            # A Prepare Write Response echoes handle, offset and value: the value is what a caller compares.
            return 'ok ' + reply[5 if opcode == 0x17 else 1:].hex()
        # Notifications, indications and anything else are not this request's answer.


def main():
    if len(sys.argv) < 4:
        fail('usage: lab-att-client.py SOURCE-ADDRESS PERIPHERAL-ADDRESS OPERATION...')
    sock = connect(sys.argv[1], sys.argv[2])
    for operation in sys.argv[3:]:
        parts = operation.split(':')
        kind = parts[0]
        if kind == 'blob':
            pdu = struct.pack('<BHH', 0x0C, int(parts[1], 16), int(parts[2]))
            result = transact(sock, pdu, 0x0D)
        elif kind == 'read':
            result = transact(sock, struct.pack('<BH', 0x0A, int(parts[1], 16)), 0x0B)
        elif kind == 'write':
            pdu = struct.pack('<BH', 0x12, int(parts[1], 16)) + bytes.fromhex(parts[2])
            result = transact(sock, pdu, 0x13)
        elif kind == 'command':
            sock.send(struct.pack('<BH', 0x52, int(parts[1], 16)) + bytes.fromhex(parts[2]))
            result = 'sent'
        elif kind == 'prepare':
            pdu = struct.pack('<BHH', 0x16, int(parts[1], 16), int(parts[2])) + bytes.fromhex(parts[3])
            result = transact(sock, pdu, 0x17)
        elif kind == 'execute':
            result = transact(sock, struct.pack('<BB', 0x18, int(parts[1])), 0x19)
        elif kind == 'pause':
            time.sleep(float(parts[1]))
            result = 'paused'
        else:
            fail('unknown operation ' + operation)
        print(operation, '->', result, flush=True)
    sock.close()


main()
