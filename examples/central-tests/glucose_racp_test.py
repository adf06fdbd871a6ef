"""A glucose meter's stored records, fetched through its Record Access Control Point as a diabetes app does:

    blemu lab run --profile profiles/glucose-meter.yaml -- \
        ~/.cache/blemu/venv/bin/python examples/central-tests/glucose_racp_test.py

    ~/.cache/blemu/venv/bin/python examples/central-tests/glucose_racp_test.py --self-check   # parsers only, no radio

No glucose client on PyPI is well known enough to judge with, so this central was written from the Bluetooth SIG's
text, not from blemu's code or profile:
- Glucose Service 1.0 / 1.0.1 (GLS): the RACP procedures: the requested records are sent as Glucose Measurement
  notifications, and only when they are all sent is the RACP indicated with Response Code (0x06), operator Null,
  the request op code and the result; Report Number of Stored Records is answered with 0x05, Null, a uint16 count.
  Glucose Profile 1.0 (GLP) section 9, the informative RACP use case, walks the same order (04 01 -> 05 00 count;
  01 01 -> the records, then 06 00 01 01).
- The SIG's characteristic definitions (GATT Specification Supplement; the older GATT XML files, Record Access Control
  Point 0x2A52, Glucose Measurement 0x2A18, Glucose Feature 0x2A51, Date Time 0x2A08): op codes 0x01 Report Stored
  Records, 0x02 Delete Stored Records, 0x03 Abort Operation, 0x04 Report Number of Stored Records, 0x05 Number of
  Stored Records Response, 0x06 Response Code, 0x07-0xFF reserved; operators 0x00 Null, 0x01 All, 0x02 <=, 0x03 >=,
  0x04 within range (inclusive), 0x05 first, 0x06 last, 0x07-0xFF reserved; response code values 0x01 Success,
  0x02 Op Code Not Supported, 0x03 Invalid Operator (e.g. Null was expected), 0x04 Operator Not Supported,
  0x05 Invalid Operand, 0x06 No Records Found, 0x07 Abort Unsuccessful, 0x08 Procedure Not Completed, 0x09 Operand
  Not Supported. GLS filter type 0x01 is the Sequence Number (uint16), 0x02 User Facing Time. All fields LSO first.
- IEEE 11073-20601 SFLOAT (the Glucose Concentration): 4-bit signed exponent in the high nibble, 12-bit signed
  mantissa; 0x07FF NaN, 0x0800 NRes, 0x07FE +INFINITY, 0x0802 -INFINITY and 0x0801 (reserved) are not values.
Public implementations read to confirm the numbers: Nordic's nRF5 SDK ble_gls.c / ble_racp.h (a qualified GLS server:
a reserved operator gets 0x04 Operator Not Supported, Null gets 0x03 Invalid Operator, an empty report gets 0x06 No
Records Found, an empty count gets 05 00 00 00), and Wireshark's packet-btatt.c and ftype-ieee-11073-float.c.

It scans with bleak's default adapter for the meter's name (env BLEMU_GLUCOSE_NAME, default "blemu Glucose") or the
Glucose service (0x1808) in its advertisement, connects once, turns on Glucose Measurement notifications and RACP
indications, and runs one ordered session (a deletion in the middle changes what follows), printing `ok   ...` or
`FAIL ...` per check and stopping at the first failure. The scan has no service-UUID filter: bluetoothd 5.87
crashes on UUID-filtered discovery from the same machine, so the filter looks at each advertisement instead.

Both characteristics feed one queue, in arrival order: that is how a check knows every record came before the RACP
indication that closes the procedure. Both are subscribed with BlueZ's StartNotify (not AcquireNotify), so both
arrive as D-Bus signals from bluetoothd in the order the ATT PDUs came, rather than one over a socket and one over
D-Bus.

The meter under test: five records, sequence numbers 1-5, flags 0x02 (concentration in kg/L with type and sample
location, no time offset, no sensor status, no context), base time 2026-12-0N 07:30:00 for record N, concentrations
95, 110, 132, 101 and 87 mg/dL (SFLOAT kg/L x 100000 = mg/dL, within 0.5), type-sample location 0x11 (capillary
whole blood, finger). No pairing, though real meters encrypt: Nordic's qualified GLS server notes "Service
specification mandates authentication" for RACP writes; the lab profile leaves security out.
"""

import asyncio
import datetime
import os
import sys
import unittest
from dataclasses import dataclass
from typing import Optional

from bleak import BleakClient, BleakScanner
from bleak.exc import BleakError

GLUCOSE = "00001808-0000-1000-8000-00805f9b34fb"
GLUCOSE_MEASUREMENT = "00002a18-0000-1000-8000-00805f9b34fb"
GLUCOSE_FEATURE = "00002a51-0000-1000-8000-00805f9b34fb"
RACP = "00002a52-0000-1000-8000-00805f9b34fb"
NAME = os.environ.get("BLEMU_GLUCOSE_NAME", "blemu Glucose")
SCAN_SECONDS = 30
CONNECT_SECONDS = 30
RESPONSE_SECONDS = 5  # for a write's Write Response, then for each record or indication after it
QUIET_SECONDS = 1  # how long, after the RACP indication, nothing more must arrive
MG_DL_TOLERANCE = 0.5

# Record Access Control Point (0x2A52)
REPORT_STORED_RECORDS = 0x01
DELETE_STORED_RECORDS = 0x02
ABORT_OPERATION = 0x03
REPORT_NUMBER_OF_STORED_RECORDS = 0x04
NUMBER_OF_STORED_RECORDS_RESPONSE = 0x05
RESPONSE_CODE = 0x06
OP_CODES = {
    REPORT_STORED_RECORDS: "Report Stored Records",
    DELETE_STORED_RECORDS: "Delete Stored Records",
    ABORT_OPERATION: "Abort Operation",
    REPORT_NUMBER_OF_STORED_RECORDS: "Report Number of Stored Records",
    NUMBER_OF_STORED_RECORDS_RESPONSE: "Number of Stored Records Response",
    RESPONSE_CODE: "Response Code",
}
NULL, ALL, LESS_OR_EQUAL, GREATER_OR_EQUAL, WITHIN_RANGE, FIRST, LAST = range(7)
FILTER_SEQUENCE_NUMBER = 0x01
RESPONSE_VALUES = {
    0x01: "Success",
    0x02: "Op Code Not Supported",
    0x03: "Invalid Operator",
    0x04: "Operator Not Supported",
    0x05: "Invalid Operand",
    0x06: "No Records Found",
    0x07: "Abort Unsuccessful",
    0x08: "Procedure Not Completed",
    0x09: "Operand Not Supported",
}
SUCCESS, OP_CODE_NOT_SUPPORTED, INVALID_OPERATOR, OPERATOR_NOT_SUPPORTED = 0x01, 0x02, 0x03, 0x04
NO_RECORDS_FOUND = 0x06

# Glucose Measurement (0x2A18) flags
TIME_OFFSET_PRESENT = 0x01
CONCENTRATION_TYPE_LOCATION_PRESENT = 0x02
UNITS_MOL_PER_L = 0x04
SENSOR_STATUS_PRESENT = 0x08
CONTEXT_FOLLOWS = 0x10
FLAGS_RESERVED = 0xE0

GLUCOSE_FEATURES = [
    "low battery detection",
    "sensor malfunction detection",
    "sensor sample size",
    "strip insertion error detection",
    "strip type error detection",
    "result high-low detection",
    "temperature high-low detection",
    "read interrupt detection",
    "general device fault",
    "time fault",
    "multiple bond",
]

# The meter under test: sequence number -> (base time, mg/dL); flags 0x02, type-sample location 0x11.
EXPECTED_FLAGS = CONCENTRATION_TYPE_LOCATION_PRESENT
EXPECTED_TYPE_LOCATION = 0x11
EXPECTED_RECORDS = {
    n: (datetime.datetime(2026, 12, n, 7, 30, 0), mg_dl) for n, mg_dl in zip(range(1, 6), (95, 110, 132, 101, 87))
}


def hexed(value: bytes) -> str:
    return value.hex(" ").upper() or "(empty)"


# --- parsers, from the characteristic definitions ------------------------------------------------------------------


class MalformedValue(ValueError):
    """A value that does not parse as its characteristic says it must."""


SFLOAT_SPECIAL = {0x07FF: "NaN", 0x0800: "NRes", 0x07FE: "+INFINITY", 0x0802: "-INFINITY", 0x0801: "reserved"}


def sfloat_parts(raw: int) -> tuple[int, int]:
    """IEEE 11073 16-bit SFLOAT as (mantissa, exponent), value = mantissa * 10**exponent. The special values are not
    measurements, so they raise."""
    if not 0 <= raw <= 0xFFFF:
        raise MalformedValue(f"SFLOAT {raw} is not 16 bits")
    if raw in SFLOAT_SPECIAL:
        raise MalformedValue(f"SFLOAT 0x{raw:04X} is {SFLOAT_SPECIAL[raw]}, not a value")
    mantissa = raw & 0x0FFF
    if mantissa >= 0x0800:
        mantissa -= 0x1000
    exponent = raw >> 12
    if exponent >= 0x8:
        exponent -= 0x10
    return mantissa, exponent


def sfloat(raw: int) -> float:
    mantissa, exponent = sfloat_parts(raw)
    return mantissa * 10.0**exponent


def parse_date_time(value: bytes) -> tuple[int, int, int, int, int, int]:
    """Date Time (0x2A08): year uint16 (1582-9999, 0 = not known), month (1-12, 0 = not known), day (1-31, 0 = not
    known), hours (0-23), minutes (0-59), seconds (0-59)."""
    if len(value) != 7:
        raise MalformedValue(f"Date Time needs 7 bytes, got {len(value)}")
    year = int.from_bytes(value[0:2], "little")
    month, day, hours, minutes, seconds = value[2:7]
    if not (year == 0 or 1582 <= year <= 9999):
        raise MalformedValue(f"year {year}")
    if month > 12 or day > 31 or hours > 23 or minutes > 59 or seconds > 59:
        raise MalformedValue(f"date time {year}-{month}-{day} {hours}:{minutes}:{seconds} out of range")
    return year, month, day, hours, minutes, seconds


@dataclass
class GlucoseMeasurement:
    flags: int
    sequence_number: int
    base_time: tuple[int, int, int, int, int, int]
    time_offset_minutes: Optional[int]
    concentration_raw: Optional[int]  # the SFLOAT as sent
    concentration: Optional[float]  # in kg/L, or mol/L when units_mol_per_l
    units_mol_per_l: bool
    sample_type: Optional[int]  # low nibble of Type-Sample Location
    sample_location: Optional[int]  # high nibble
    sensor_status: Optional[int]
    context_follows: bool

    @property
    def mg_per_dl(self) -> float:
        """kg/L to mg/dL: 1 kg/L = 10**6 mg per 10 dL = 10**5 mg/dL."""
        if self.concentration_raw is None or self.units_mol_per_l:
            raise MalformedValue("no concentration in kg/L")
        mantissa, exponent = sfloat_parts(self.concentration_raw)
        return mantissa * 10.0 ** (exponent + 5)

    def describe(self) -> str:
        y, mo, d, h, mi, s = self.base_time
        text = f"#{self.sequence_number} {y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}"
        if self.time_offset_minutes is not None:
            text += f" {self.time_offset_minutes:+} min"
        if self.concentration is not None:
            text += f" {self.concentration:g} mol/L" if self.units_mol_per_l else f" {self.mg_per_dl:g} mg/dL"
        return text


def parse_glucose_measurement(value: bytes) -> GlucoseMeasurement:
    """Glucose Measurement (0x2A18): flags uint8, sequence number uint16, base time (Date Time, 7 bytes), then as the
    flags say: time offset sint16 (bit 0); concentration SFLOAT and type-sample location uint8 (bit 1; units kg/L, or
    mol/L with bit 2); sensor status annunciation uint16 (bit 3). Bit 4: a context characteristic follows."""
    value = bytes(value)
    if len(value) < 10:
        raise MalformedValue(f"Glucose Measurement needs at least 10 bytes, got {len(value)}: {hexed(value)}")
    flags = value[0]
    if flags & FLAGS_RESERVED:
        raise MalformedValue(f"reserved flag bits set in 0x{flags:02X}")
    sequence_number = int.from_bytes(value[1:3], "little")
    base_time = parse_date_time(value[3:10])
    at = 10
    need = at + (2 if flags & TIME_OFFSET_PRESENT else 0)
    need += 3 if flags & CONCENTRATION_TYPE_LOCATION_PRESENT else 0
    need += 2 if flags & SENSOR_STATUS_PRESENT else 0
    if len(value) != need:
        raise MalformedValue(f"flags 0x{flags:02X} make {need} bytes, got {len(value)}: {hexed(value)}")
    time_offset = None
    if flags & TIME_OFFSET_PRESENT:
        time_offset = int.from_bytes(value[at : at + 2], "little", signed=True)
        at += 2
    concentration_raw = concentration = sample_type = sample_location = None
    if flags & CONCENTRATION_TYPE_LOCATION_PRESENT:
        concentration_raw = int.from_bytes(value[at : at + 2], "little")
        concentration = sfloat(concentration_raw)
        sample_type, sample_location = value[at + 2] & 0x0F, value[at + 2] >> 4
        at += 3
    sensor_status = None
    if flags & SENSOR_STATUS_PRESENT:
        sensor_status = int.from_bytes(value[at : at + 2], "little")
        at += 2
    return GlucoseMeasurement(
        flags=flags,
        sequence_number=sequence_number,
        base_time=base_time,
        time_offset_minutes=time_offset,
        concentration_raw=concentration_raw,
        concentration=concentration,
        units_mol_per_l=bool(flags & UNITS_MOL_PER_L),
        sample_type=sample_type,
        sample_location=sample_location,
        sensor_status=sensor_status,
        context_follows=bool(flags & CONTEXT_FOLLOWS),
    )


def parse_racp_indication(value: bytes) -> tuple:
    """An RACP indication from the server: ("response", request op code, response code value) for 06 00 op value, or
    ("count", n) for 05 00 n(uint16). Both carry the Null operator; anything else is malformed."""
    value = bytes(value)
    if len(value) != 4:
        raise MalformedValue(f"RACP indication of {len(value)} bytes (4 expected): {hexed(value)}")
    op, operator = value[0], value[1]
    if operator != NULL:
        raise MalformedValue(f"operator 0x{operator:02X}, not Null, in {hexed(value)}")
    if op == RESPONSE_CODE:
        return ("response", value[2], value[3])
    if op == NUMBER_OF_STORED_RECORDS_RESPONSE:
        return ("count", int.from_bytes(value[2:4], "little"))
    raise MalformedValue(f"op code 0x{op:02X} is not a server's RACP response: {hexed(value)}")


def describe_racp(value: bytes) -> str:
    try:
        parsed = parse_racp_indication(value)
    except MalformedValue as error:
        return f"{hexed(value)} ({error})"
    if parsed[0] == "count":
        return f"{hexed(value)} = {parsed[1]} records"
    _, request, code = parsed
    return f"{hexed(value)} = {OP_CODES.get(request, f'op 0x{request:02X}')}: {RESPONSE_VALUES.get(code, 'reserved')}"


def sequence_operand(sequence_number: int) -> bytes:
    return bytes([FILTER_SEQUENCE_NUMBER]) + sequence_number.to_bytes(2, "little")


def self_check() -> int:
    """The parsers on hand-made values; no Bluetooth. Returns an exit code."""
    failures = []

    def expect(name, got, want):
        if got != want:
            failures.append(f"{name}: got {got!r}, want {want!r}")

    def expect_error(name, body):
        try:
            body()
        except MalformedValue:
            return
        failures.append(f"{name}: no MalformedValue")

    expect("SFLOAT 95e-5 (0xB05F)", sfloat_parts(0xB05F), (95, -5))
    expect("SFLOAT 0x0001", sfloat(0x0001), 1.0)
    expect("SFLOAT -1 (0x0FFF)", sfloat(0x0FFF), -1.0)
    expect("SFLOAT -2048e7 (0x7800)", sfloat_parts(0x7800), (-2048, 7))
    expect("SFLOAT 2047e-8 (0x87FF)", sfloat_parts(0x87FF), (2047, -8))
    expect("SFLOAT -0.1 (0xFFFF)", sfloat_parts(0xFFFF), (-1, -1))
    for raw in SFLOAT_SPECIAL:
        expect_error(f"SFLOAT special 0x{raw:04X}", lambda raw=raw: sfloat(raw))

    # Record 1 as the meter should send it: flags 02, #1, 2026-12-01 07:30:00, 95e-5 kg/L, type 1 location 1.
    record = bytes.fromhex("02 0100 EA07 0C 01 07 1E 00 5FB0 11")
    m = parse_glucose_measurement(record)
    expect("record 1 sequence", m.sequence_number, 1)
    expect("record 1 time", m.base_time, (2026, 12, 1, 7, 30, 0))
    expect("record 1 type, location", (m.sample_type, m.sample_location), (1, 1))
    expect("record 1 optional fields", (m.time_offset_minutes, m.sensor_status, m.context_follows), (None, None, False))
    if abs(m.mg_per_dl - 95) > 1e-9:
        failures.append(f"record 1 mg/dL {m.mg_per_dl}")
    # 110 mg/dL sent as 11e-4 rather than 110e-5: the same value.
    if abs(parse_glucose_measurement(bytes.fromhex("02 0200 EA07 0C 02 07 1E 00 0BC0 11")).mg_per_dl - 110) > 1e-9:
        failures.append("110 mg/dL as 11e-4")
    # Every field: time offset -60 min, 53e-4 mol/L, type 2 location 1, sensor status 0x0001, context follows.
    full = parse_glucose_measurement(bytes.fromhex("1F 3412 E607 03 1F 17 3B 3B C4FF 35C0 12 0100"))
    expect("full sequence", full.sequence_number, 0x1234)
    expect("full time", full.base_time, (2022, 3, 31, 23, 59, 59))
    expect("full offset", full.time_offset_minutes, -60)
    expect("full units", full.units_mol_per_l, True)
    expect("full concentration", full.concentration_raw, 0xC035)
    expect("full concentration value", sfloat_parts(0xC035), (53, -4))
    expect("full type, location", (full.sample_type, full.sample_location), (2, 1))
    expect("full status, context", (full.sensor_status, full.context_follows), (1, True))
    expect_error("mg/dL of a mol/L value", lambda: full.mg_per_dl)
    expect_error("record cut short", lambda: parse_glucose_measurement(record[:-1]))
    expect_error("a byte too many", lambda: parse_glucose_measurement(record + b"\x00"))
    expect_error("reserved flag", lambda: parse_glucose_measurement(bytes([0x22]) + record[1:]))
    expect_error("NaN concentration", lambda: parse_glucose_measurement(record[:10] + b"\xff\x07\x11"))
    expect_error("month 13", lambda: parse_glucose_measurement(bytes.fromhex("02 0100 EA07 0D 01 07 1E 00 5FB0 11")))

    expect("RACP success", parse_racp_indication(bytes.fromhex("06 00 01 01")), ("response", 1, 1))
    expect("RACP op code not supported", parse_racp_indication(bytes.fromhex("06 00 07 02")), ("response", 7, 2))
    expect("RACP count 5", parse_racp_indication(bytes.fromhex("05 00 05 00")), ("count", 5))
    expect("RACP count 258", parse_racp_indication(bytes.fromhex("05 00 02 01")), ("count", 258))
    expect_error("RACP operator not Null", lambda: parse_racp_indication(bytes.fromhex("06 01 01 01")))
    expect_error("RACP short", lambda: parse_racp_indication(bytes.fromhex("06 00 01")))
    expect_error("RACP request op code from a server", lambda: parse_racp_indication(bytes.fromhex("01 01 00 00")))
    expect("operand >= 4", sequence_operand(4), bytes.fromhex("01 04 00"))
    expect(
        "describe",
        describe_racp(bytes.fromhex("06 00 01 06")),
        "06 00 01 06 = Report Stored Records: No Records Found",
    )

    for failure in failures:
        print(f"FAIL {failure}")
    print("self-check: " + ("ok" if not failures else f"{len(failures)} failed"))
    return 1 if failures else 0


# --- the session ---------------------------------------------------------------------------------------------------


async def next_event(queue: asyncio.Queue, what: str, seconds: float):
    try:
        return await asyncio.wait_for(queue.get(), timeout=seconds)
    except asyncio.TimeoutError:
        raise AssertionError(f"no {what} within {seconds} s") from None


def drain(queue: asyncio.Queue) -> list:
    left = []
    while not queue.empty():
        left.append(queue.get_nowait())
    return left


class GlucoseMeter(unittest.IsolatedAsyncioTestCase):
    """What a diabetes app needs from a glucose meter's record store, in the order it asks."""

    async def asyncSetUp(self):
        device = await BleakScanner.find_device_by_filter(
            lambda device, advertisement: NAME in (advertisement.local_name, device.name)
            or GLUCOSE in advertisement.service_uuids,
            timeout=SCAN_SECONDS,
        )
        if device is None:
            self.fail(f"no {NAME!r} nor any Glucose service advertising within {SCAN_SECONDS} s")
        self.client = BleakClient(device)
        await asyncio.wait_for(self.client.connect(), timeout=CONNECT_SECONDS)
        print(f"\nconnected to {device.name!r} at {device.address}", flush=True)
        # One queue for both characteristics, so arrival order is kept: ("measurement" | "racp", bytes).
        self.events: asyncio.Queue = asyncio.Queue()

    async def asyncTearDown(self):
        await asyncio.wait_for(self.client.disconnect(), timeout=CONNECT_SECONDS)

    async def check(self, name, body):
        """Runs one check, printing ok or FAIL with why; a failure ends the session."""
        try:
            detail = await body()
        except (AssertionError, BleakError, MalformedValue, asyncio.TimeoutError) as error:
            reason = str(error) or type(error).__name__
            print(f"FAIL {name}: {reason}", flush=True)
            raise AssertionError(f"{name}: {reason}") from error
        print(f"ok   {name}" + (f" ({detail})" if detail else ""), flush=True)

    async def racp(self, request: bytes, expected: bytes, records: Optional[list] = None) -> str:
        """Writes `request` to the RACP (a Write Request) and checks what follows: exactly the Glucose Measurements of
        the sequence numbers in `records` (none if empty or None), in that order, each matching the meter's stored
        record, all of them before one RACP indication that is exactly `expected`; then nothing more for
        QUIET_SECONDS."""
        records = records or []
        left = drain(self.events)
        self.assertEqual(left, [], "events before the write")
        await asyncio.wait_for(self.client.write_gatt_char(RACP, request, response=True), timeout=RESPONSE_SECONDS)
        measured: list[GlucoseMeasurement] = []
        for _ in range(len(records) + 8):  # bounded: a meter that streams more fails, it does not hang
            kind, value = await next_event(
                self.events,
                f"RACP indication (after {len(measured)} measurements: {[m.sequence_number for m in measured]})",
                RESPONSE_SECONDS,
            )
            if kind == "racp":
                break
            try:
                measured.append(parse_glucose_measurement(value))
            except MalformedValue as error:
                raise AssertionError(f"measurement {hexed(value)} does not parse: {error}") from None
        else:
            raise AssertionError(f"more than {len(records) + 8} measurements and no RACP indication")
        self.assertEqual(hexed(value), hexed(expected), f"RACP indication: {describe_racp(value)}")
        sequence = [m.sequence_number for m in measured]
        if sequence != records:
            raise AssertionError(f"measurements before the RACP indication: {sequence or 'none'}, expected {records}")
        for m in measured:
            self.judge(m)
        await asyncio.sleep(QUIET_SECONDS)
        after = [f"{kind} {hexed(v)}" for kind, v in drain(self.events)]
        if after:
            raise AssertionError(f"after the RACP indication, which must close the procedure: {after}")
        return "; ".join([m.describe() for m in measured] + [describe_racp(value)])

    def judge(self, m: GlucoseMeasurement) -> None:
        """One measurement against the meter's stored record of its sequence number."""
        n = m.sequence_number
        if n not in EXPECTED_RECORDS:
            raise AssertionError(f"sequence number {n}: the meter stores 1-5")
        when, mg_dl = EXPECTED_RECORDS[n]
        want_time = (when.year, when.month, when.day, when.hour, when.minute, when.second)
        problems = []
        if m.flags != EXPECTED_FLAGS:
            problems.append(f"flags 0x{m.flags:02X}, 0x{EXPECTED_FLAGS:02X} expected")
        if m.base_time != want_time:
            problems.append(f"base time {m.base_time}, {want_time} expected")
        if m.concentration_raw is None or m.units_mol_per_l:
            problems.append("no concentration in kg/L")
        elif abs(m.mg_per_dl - mg_dl) > MG_DL_TOLERANCE:
            problems.append(
                f"concentration {m.mg_per_dl:g} mg/dL (SFLOAT 0x{m.concentration_raw:04X}), {mg_dl} expected"
            )
        if (m.sample_type, m.sample_location) != (EXPECTED_TYPE_LOCATION & 0x0F, EXPECTED_TYPE_LOCATION >> 4):
            problems.append(f"type {m.sample_type}, sample location {m.sample_location}; 1 and 1 expected")
        if problems:
            raise AssertionError(f"record #{n}: " + "; ".join(problems))

    async def test_a_record_access_session(self):
        def measured(_, value: bytearray):
            self.events.put_nowait(("measurement", bytes(value)))

        def indicated(_, value: bytearray):
            self.events.put_nowait(("racp", bytes(value)))

        async def feature():
            value = await asyncio.wait_for(self.client.read_gatt_char(GLUCOSE_FEATURE), timeout=RESPONSE_SECONDS)
            self.assertEqual(len(value), 2, f"Glucose Feature {hexed(value)}")
            bits = int.from_bytes(value, "little")
            names = [name for i, name in enumerate(GLUCOSE_FEATURES) if bits >> i & 1]
            return f"{hexed(value)}: {', '.join(names) or 'none'}"

        async def subscribe():
            services = {service.uuid for service in self.client.services}
            self.assertIn(GLUCOSE, services, "Glucose service")
            await asyncio.wait_for(
                self.client.start_notify(GLUCOSE_MEASUREMENT, measured, bluez={"use_start_notify": True}),
                timeout=RESPONSE_SECONDS,
            )
            await asyncio.wait_for(
                self.client.start_notify(RACP, indicated, bluez={"use_start_notify": True}), timeout=RESPONSE_SECONDS
            )
            await asyncio.sleep(QUIET_SECONDS)
            self.assertEqual([(k, hexed(v)) for k, v in drain(self.events)], [], "unrequested values on subscribing")

        await self.check("notifications on Glucose Measurement (0x2A18), indications on RACP (0x2A52)", subscribe)
        await self.check("Glucose Feature (0x2A51) reads as 2 bytes", feature)

        def command(request: str, expected: str, records=None):
            return lambda: self.racp(bytes.fromhex(request), bytes.fromhex(expected), records)

        await self.check("Report Number of Stored Records, all (04 01): 05 00 05 00", command("04 01", "05 00 05 00"))
        await self.check(
            "Report Stored Records, all (01 01): records 1-5 in order, then 06 00 01 01",
            command("01 01", "06 00 01 01", [1, 2, 3, 4, 5]),
        )
        await self.check(
            "Report Stored Records, sequence number >= 4 (01 03 01 04 00): records 4, 5, then 06 00 01 01",
            command("01 03" + sequence_operand(4).hex(), "06 00 01 01", [4, 5]),
        )
        await self.check(
            "Report Number of Stored Records, sequence number >= 4 (04 03 01 04 00): 05 00 02 00",
            command("04 03" + sequence_operand(4).hex(), "05 00 02 00"),
        )
        await self.check(
            "Report Stored Records, last (01 06): record 5, then 06 00 01 01", command("01 06", "06 00 01 01", [5])
        )
        await self.check(
            "Report Stored Records, first (01 05): record 1, then 06 00 01 01", command("01 05", "06 00 01 01", [1])
        )
        await self.check(
            "Report Stored Records, reserved operator 0x09 (01 09): 06 00 01 04 (Operator Not Supported), no record",
            command("01 09", "06 00 01 04"),
        )
        await self.check(
            "Report Stored Records with the Null operator (01 00): 06 00 01 03 (Invalid Operator), no record",
            command("01 00", "06 00 01 03"),
        )
        await self.check(
            "reserved op code 0x07 (07 01): 06 00 07 02 (Op Code Not Supported)", command("07 01", "06 00 07 02")
        )
        await self.check("Delete Stored Records, all (02 01): 06 00 02 01", command("02 01", "06 00 02 01"))
        await self.check(
            "Report Number of Stored Records after the delete (04 01): 05 00 00 00", command("04 01", "05 00 00 00")
        )
        await self.check(
            "Report Stored Records after the delete (01 01): no record, 06 00 01 06 (No Records Found)",
            command("01 01", "06 00 01 06"),
        )

        async def unsubscribe():
            await asyncio.wait_for(self.client.stop_notify(GLUCOSE_MEASUREMENT), timeout=RESPONSE_SECONDS)
            await asyncio.wait_for(self.client.stop_notify(RACP), timeout=RESPONSE_SECONDS)

        await self.check("notifications and indications off", unsubscribe)


if __name__ == "__main__":
    if "--self-check" in sys.argv[1:]:
        sys.exit(self_check())
    unittest.main(verbosity=2)
