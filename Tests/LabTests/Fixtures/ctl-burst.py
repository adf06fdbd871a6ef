# Sends `blemu ctl` requests back to back on one control-socket connection (Tests/LabTests/ProfilesScenario.swift):
#   ctl-burst.py SOCKET ID FIELD FIRST LAST
# sets field FIELD of characteristic ID to FIRST, FIRST+1, ... LAST, as fast as the emulator answers; prints the
# number of ok answers and exits 1 if any answer is not ok.
import json, socket, sys

path, characteristic, field, first, last = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
connection.settimeout(30)
connection.connect(path)
requests = ''.join(json.dumps({'command': 'set', 'id': characteristic, 'fields': {field: value}}) + '\n'
                   for value in range(first, last + 1))
connection.sendall(requests.encode())
answers, pending = [], b''
while len(answers) < last - first + 1:
    data = connection.recv(65536)
    if not data:
        break
    pending += data
    *lines, pending = pending.split(b'\n')
    answers += [json.loads(line) for line in lines if line.strip()]
ok = sum(1 for answer in answers if answer.get('ok'))
print(ok, 'ok of', last - first + 1, flush=True)
sys.exit(0 if ok == last - first + 1 else 1)
