"""A speed-and-cadence firmware with one defect, planted on the lab's served sensor (ProtocolDevicesScenario): its
SC Control Point lists the chest (0x0E) among the places it can be fitted, where its profile says the rear wheel
(0x0C). Every other request stays the profile's (`PROFILE`). `blemu verify --writes` must find exactly that one.

    csc_firmware_defect.py CONTROL-SOCKET

Prints `attached` once its claim is accepted, then answers until the device stops or it is killed.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python", "src"))

from blemu import PROFILE, Peripheral, Request  # noqa: E402

device = Peripheral(sys.argv[1])


@device.on_write("sc-control-point")
def control_point(request: Request) -> object:
    if request.value != b"\x04":
        return PROFILE
    # Request Supported Sensor Locations (CSCS 1.0 3.4.2.4), answered with one location wrong.
    def indicate() -> None:
        device.set("sc-control-point", bytes.fromhex("10 04 01 04 05 0B 0E"))

    request.then(indicate)
    return None


print("attached", flush=True)
device.serve()
