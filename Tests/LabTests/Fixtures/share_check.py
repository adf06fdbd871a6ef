"""Reads a file in the results share while another thread appends to it, as a user's test reads blemu's event log
or log while blemu writes it: every read must succeed. With the work share mounted without a cache mode, kernel
7.2's 9p client answered a read racing an append with ENODATA (docs/lab.md, "Facts the code relies on"). Prints one line:
`reads N errors {...}`, the errors by name."""

import errno
import os
import sys
import threading

path = os.path.join(sys.argv[1], "share-check.log")
with open(path, "w"):
    pass
done = threading.Event()


def append():
    with open(path, "a", buffering=1) as out:
        for index in range(20000):
            out.write("line %d %s\n" % (index, "x" * 60))
    done.set()


errors = {}
reads = 0
writer = threading.Thread(target=append)
writer.start()
while not done.is_set():
    try:
        with open(path) as growing:
            growing.read()
        reads += 1
    except OSError as error:
        name = errno.errorcode.get(error.errno, str(error.errno))
        errors[name] = errors.get(name, 0) + 1
writer.join()
print("reads %d errors %s" % (reads, errors), flush=True)
