#!/usr/bin/python3
"""`blemu ctl SOCK COMMAND ...` for a device whose control socket this machine cannot reach, through its live view.

    ctl_via_view.py 'http://127.0.0.1:8080/?token=T' get battery-level

The lab's peripherals and their control sockets are inside a VM; only each one's view is forwarded to the host
(docs/live-view.md, "The lab"). This opens the view's WebSocket as a second page would (its own Origin, the
token), sends the command as the control protocol's request, and prints the device's answer as `blemu ctl` does, so
check_live_view.py steers and reads a lab device the way it does a local one. It knows the few commands the check
uses: get, set ID --field NAME=VALUE, notify, counters, describe, status, schedules [pause|resume] [ID].
Python's standard library only (RFC 6455 by hand: one masked text frame out, text frames in).
"""
import base64
import json
import os
import socket
import struct
import sys
import urllib.parse


def request(words):
    command, rest = words[0], words[1:]
    if command == "get" or command == "notify":
        return {"command": command, "id": rest[0]}
    if command == "set":
        fields = {}
        for index, word in enumerate(rest):
            if word == "--field":
                name, value = rest[index + 1].split("=", 1)
                fields[name] = int(value) if value.lstrip("-").isdigit() else value
        return {"command": "set", "id": rest[0], "fields": fields}
    if command == "schedules":
        body = {"command": "schedules"}
        if rest:
            body["action"] = rest[0]
        if len(rest) > 1:
            body["id"] = rest[1]
        return body
    if command in ("counters", "describe", "status"):
        return {"command": command}
    raise SystemExit("ctl_via_view.py: %s is not a command it knows" % command)


def frames(connection, pending):
    while True:
        while len(pending) < 2:
            pending += receive(connection)
        length, start = pending[1] & 0x7F, 2
        if length == 126:
            while len(pending) < 4:
                pending += receive(connection)
            length, start = struct.unpack(">H", pending[2:4])[0], 4
        elif length == 127:
            while len(pending) < 10:
                pending += receive(connection)
            length, start = struct.unpack(">Q", pending[2:10])[0], 10
        while len(pending) < start + length:
            pending += receive(connection)
        opcode, payload, pending = pending[0] & 0x0F, pending[start:start + length], pending[start + length:]
        if opcode == 0x8:
            raise SystemExit("ctl_via_view.py: the view closed the connection")
        if opcode == 0x1:
            yield payload.decode("utf-8")


def receive(connection):
    data = connection.recv(65536)
    if not data:
        raise SystemExit("ctl_via_view.py: the view closed the connection")
    return data


def main():
    url, words = sys.argv[1], sys.argv[2:]
    parts = urllib.parse.urlsplit(url)
    token = urllib.parse.parse_qs(parts.query).get("token", [None])[0]
    connection = socket.create_connection((parts.hostname, parts.port), timeout=15)
    # The token in the query, as a page's first request carries it: the cookie the view sets is named after the port
    # it listens on, which a forwarded port (the lab's) does not tell.
    headers = [
        "GET /ws" + ("?token=" + urllib.parse.quote(token) if token else "") + " HTTP/1.1", "Host: " + parts.netloc, "Origin: %s://%s" % (parts.scheme, parts.netloc),
        "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: " + base64.b64encode(os.urandom(16)).decode(),
    ]
    connection.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += receive(connection)
    head, rest = head.split(b"\r\n\r\n", 1)
    status = head.split(b"\r\n", 1)[0].decode()
    if " 101 " not in status + " ":
        raise SystemExit("ctl_via_view.py: the view refused the WebSocket: %s" % status)
    payload = json.dumps({"type": "command", "seq": 1, "request": request(words)}).encode()
    mask = os.urandom(4)
    header = bytes([0x81]) + (bytes([0x80 | len(payload)]) if len(payload) < 126
                              else bytes([0x80 | 126]) + struct.pack(">H", len(payload)))
    connection.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    for text in frames(connection, rest):
        message = json.loads(text)
        if message.get("type") == "answer" and message.get("seq") == 1:
            print(json.dumps(message["response"]))
            return 0 if message["response"].get("ok") else 65


if __name__ == "__main__":
    sys.exit(main())
