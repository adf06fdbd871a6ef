import Testing

@testable import ProbeCentral

/// The SIG formats `blemu probe` decodes, checked on bytes a real sensor sends.
struct ValueDecoderTests {
    @Test func aHeartRateMeasurementWithU8BpmAndContactDecodes() {
        // Flags 0x06: u8 format, contact supported and detected; 72 bpm (the heart-rate profile's value).
        #expect(ValueDecoder.describe([0x06, 0x48], uuid: "2A37") == "72 bpm, contact detected")
    }

    @Test func aHeartRateMeasurementWithU16BpmEnergyAndRRIntervalsDecodes() {
        // Flags 0x19: u16 format, energy expended, RR present; 300 bpm, 258 kJ, RR 1024/1024 s and 512/1024 s.
        let bytes: [UInt8] = [0x19, 0x2C, 0x01, 0x02, 0x01, 0x00, 0x04, 0x00, 0x02]
        #expect(ValueDecoder.describe(bytes, uuid: "2a37") == "300 bpm, energy 258 kJ, RR 1.000 0.500 s")
    }

    @Test func aHeartRateMeasurementWithoutContactSaysSo() {
        #expect(ValueDecoder.describe([0x04, 0x3C], uuid: "2A37") == "60 bpm, no contact")
    }

    @Test func aTruncatedHeartRateMeasurementIsCalledMalformedNotGuessed() {
        #expect(ValueDecoder.describe([0x01, 0x48], uuid: "2A37") == "malformed (2 bytes)")
    }

    @Test func aTemperatureMeasurementFloatDecodesWithOrWithoutItsTypeByte() {
        // FLOAT 0xFF00016E: exponent -1, mantissa 366. Flags 0x04 promise a type byte that some devices omit.
        #expect(ValueDecoder.describe([0x04, 0x6E, 0x01, 0x00, 0xFF], uuid: "2A1C") == "36.6 °C")
        #expect(ValueDecoder.describe([0x04, 0x6E, 0x01, 0x00, 0xFF, 0x02], uuid: "2A1C") == "36.6 °C, type Body")
        #expect(ValueDecoder.describe([0x01, 0xB2, 0x03, 0x00, 0xFF], uuid: "2A1C") == "94.6 °F")
    }

    @Test func aCSCMeasurementDecodesWheelAndCrankData() {
        // Wheel: 0x00000102 = 258 revolutions at 2048/1024 s; crank: 3 revolutions at 1024/1024 s.
        let bytes: [UInt8] = [0x03, 0x02, 0x01, 0x00, 0x00, 0x00, 0x08, 0x03, 0x00, 0x00, 0x04]
        #expect(ValueDecoder.describe(bytes, uuid: "2A5B") == "wheel 258 rev at 2.000 s, crank 3 rev at 1.000 s")
        #expect(ValueDecoder.describe([0x02, 0x05, 0x00, 0x00, 0x02], uuid: "2A5B") == "crank 5 rev at 0.500 s")
    }

    @Test func theSmallerFormatsDecode() {
        #expect(ValueDecoder.describe([87], uuid: "2A19") == "87 %")
        #expect(ValueDecoder.describe([0x01], uuid: "2A38") == "Chest")
        #expect(ValueDecoder.describe([0x2A, 0x0E], uuid: "2A6E") == "36.26 °C")
        #expect(ValueDecoder.describe([0x9C, 0xFF], uuid: "2A6E") == "-1.00 °C")
        #expect(ValueDecoder.describe(Array("H10".utf8), uuid: "00002a24-0000-1000-8000-00805f9b34fb") == "\"H10\"")
    }

    @Test func unknownUUIDsShowTextOnlyWhenTheBytesArePrintable() {
        #expect(ValueDecoder.describe(Array("hello".utf8) + [0], uuid: "FFF1") == "\"hello\"")
        #expect(ValueDecoder.describe([0x00, 0x01, 0xFF], uuid: "FFF1") == nil)
        #expect(ValueDecoder.describe([], uuid: "FFF1") == nil)
    }

    @Test func attErrorsAreRecoveredFromBluetoothdsErrorReplies() {
        #expect(ProbeFailure(name: "org.bluez.Error.NotPermitted", message: "Read not permitted").attError == 0x02)
        #expect(
            ProbeFailure(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x80")
                .attError == 0x80)
        #expect(ProbeFailure(name: "org.bluez.Error.NotAuthorized", message: "Not Authorized").attError == 0x08)
        // Authentication, encryption and key size all read "Not paired": the code is lost, so none is claimed.
        #expect(ProbeFailure(name: "org.bluez.Error.NotPermitted", message: "Not paired").attError == nil)
    }
}
