"""The bluez-peripheral contender of the GATT benchmark (Benchmarks/run-gatt): the benchmark's characteristics in
bluez-peripheral's own API (a Service subclass with decorated characteristics). It finds the adapter by
introspecting /org/bluez on the system bus, which the benchmark points at its fake bluetoothd with
DBUS_SYSTEM_BUS_ADDRESS. Control point: a write of u32 LE N sends N notifications (characteristic.changed emits
PropertiesChanged); a read returns how many writes without response arrived. Usage: ... [--extra N]"""
import asyncio
import struct
import sys

from bluez_peripheral.advert import Advertisement
from bluez_peripheral.gatt.characteristic import CharacteristicFlags as F, characteristic
from bluez_peripheral.gatt.service import Service, ServiceCollection
from bluez_peripheral.util import Adapter, get_message_bus

TAIL = "-be4c-4f2a-9c1e-6d0a5e7b0c00"


class Bench(Service):
    def __init__(self):
        self.values = {"rw20": bytes(range(20)), "rw512": bytes(i % 256 for i in range(512))}
        self.writes_without_response = 0
        super().__init__("b1e70000" + TAIL, True)

    @characteristic("b1e70001" + TAIL, F.READ | F.WRITE)
    def rw20(self, options):
        return self.values["rw20"]

    @rw20.setter
    def rw20(self, value, options):
        self.values["rw20"] = bytes(value)

    @characteristic("b1e70002" + TAIL, F.READ | F.WRITE)
    def rw512(self, options):
        return self.values["rw512"]

    @rw512.setter
    def rw512(self, value, options):
        self.values["rw512"] = bytes(value)

    @characteristic("b1e70003" + TAIL, F.READ | F.WRITE_WITHOUT_RESPONSE)
    def wnr(self, options):
        return bytes(20)

    @wnr.setter
    def wnr(self, value, options):
        self.writes_without_response += 1

    @characteristic("b1e70004" + TAIL, F.READ | F.NOTIFY)
    def notify(self, options):
        return bytes(20)

    @characteristic("b1e70005" + TAIL, F.READ | F.WRITE)
    def control(self, options):
        return struct.pack("<I", self.writes_without_response)

    @control.setter
    def control(self, value, options):
        if len(value) >= 4:
            asyncio.get_event_loop().call_soon(self.burst, struct.unpack("<I", bytes(value[:4]))[0])

    def burst(self, count):
        for sequence in range(count):
            self.notify.changed(struct.pack("<I", sequence & 0xFFFFFFFF) + bytes([sequence & 0xFF] * 16))


def scale_service(extra):
    service = Service("b1e71000" + TAIL, True)
    for index in range(extra):
        chrc = characteristic("b1e8%04x" % index + TAIL, F.READ)
        chrc(lambda service, options: bytes(20))
        service.add_characteristic(chrc)
    return service


async def main(extra):
    bus = await get_message_bus()
    adapter = await Adapter.get_first(bus)
    services = [Bench()] + ([scale_service(extra)] if extra > 0 else [])
    await ServiceCollection(services).register(bus, adapter=adapter)
    advert = Advertisement("bench", ["b1e70000" + TAIL], 0, 0)
    await advert.register(bus, adapter)
    print("advertising", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[2]) if len(sys.argv) == 3 and sys.argv[1] == "--extra" else 0))
