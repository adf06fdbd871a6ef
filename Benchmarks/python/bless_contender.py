"""The bless contender of the GATT benchmark (Benchmarks/run-gatt): the benchmark's characteristics in bless's
own API. bless finds the adapter through org.bluez's ObjectManager (the first object with GattManager1) on the
system bus, which the benchmark points at its fake bluetoothd with DBUS_SYSTEM_BUS_ADDRESS.
Control point: a write of u32 LE N sends N notifications (update_value emits PropertiesChanged); a read returns how
many writes without response arrived. Usage: bless_contender.py [--extra N]"""
import asyncio
import struct
import sys

from bless import BlessServer, GATTAttributePermissions as A, GATTCharacteristicProperties as P

TAIL = "-be4c-4f2a-9c1e-6d0a5e7b0c00"
SERVICE, RW20, RW512, WNR, NOTIFY, CONTROL = ("b1e7000%d" % i + TAIL for i in range(6))
SCALE = "b1e71000" + TAIL
writes_without_response = 0
server = None


def read(characteristic, **kwargs):
    if str(characteristic.uuid) == CONTROL:
        return bytearray(struct.pack("<I", writes_without_response))
    return characteristic.value


def burst(count):
    for sequence in range(count):
        value = bytearray(struct.pack("<I", sequence & 0xFFFFFFFF)) + bytearray([sequence & 0xFF] * 16)
        server.get_characteristic(NOTIFY).value = value
        server.update_value(SERVICE, NOTIFY)


def write(characteristic, value, **kwargs):
    global writes_without_response
    uuid = str(characteristic.uuid)
    if uuid == WNR:
        writes_without_response += 1
    if uuid == CONTROL and len(value) >= 4:
        asyncio.get_event_loop().call_soon(burst, struct.unpack("<I", bytes(value[:4]))[0])
        return
    characteristic.value = value


async def main(extra):
    global server
    server = BlessServer(name="bench")
    server.read_request_func = read
    server.write_request_func = write
    rw = P.read | P.write
    permissions = A.readable | A.writeable
    await server.add_new_service(SERVICE)
    await server.add_new_characteristic(SERVICE, RW20, rw, bytearray(range(20)), permissions)
    await server.add_new_characteristic(SERVICE, RW512, rw, bytearray(i % 256 for i in range(512)), permissions)
    await server.add_new_characteristic(SERVICE, WNR, P.read | P.write_without_response, bytearray(20), permissions)
    await server.add_new_characteristic(SERVICE, NOTIFY, P.read | P.notify, bytearray(20), A.readable)
    await server.add_new_characteristic(SERVICE, CONTROL, rw, bytearray(4), permissions)
    if extra > 0:
        await server.add_new_service(SCALE)
        for index in range(extra):
            await server.add_new_characteristic(SCALE, "b1e8%04x" % index + TAIL, P.read, bytearray(20), A.readable)
    await server.start()
    print("advertising", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[2]) if len(sys.argv) == 3 and sys.argv[1] == "--extra" else 0))
