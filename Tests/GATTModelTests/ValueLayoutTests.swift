import Testing

@testable import GATTModel

@Suite struct ValueLayoutTests {
    let heartRate = ValueLayout([
        FieldSpec(
            name: "flags",
            type: .flags(
                bytes: 1,
                bits: [
                    FlagBit(name: "bpm-u16", bit: 0), FlagBit(name: "sensor-contact-detected", bit: 1),
                    FlagBit(name: "sensor-contact-supported", bit: 2), FlagBit(name: "energy-expended", bit: 3),
                    FlagBit(name: "rr-interval", bit: 4),
                ])),
        FieldSpec(name: "bpm", type: .unsigned(bytes: 1)),
    ])

    @Test func heartRateMeasurementEncodesItsFlagsAndBPM() throws {
        let bytes = try heartRate.encode([
            .flags(["sensor-contact-supported", "sensor-contact-detected"]), .integer(72),
        ])
        #expect(bytes == [0x06, 72])
        #expect(
            heartRate.decode(bytes) == [.flags(["sensor-contact-detected", "sensor-contact-supported"]), .integer(72)])
    }

    @Test func integersOutsideTheirTypeAreRefused() {
        #expect(throws: FieldError.outOfRange(field: "bpm", value: "256", type: "u8", range: "0 to 255")) {
            try heartRate.encode([.flags([]), .integer(256)])
        }
        // Not only "20.5 is not an s16": the message says that the field is an integer, and its range.
        let error = #expect(throws: FieldError.self) {
            try ValueLayout.encode(.real(20.5), as: FieldSpec(name: "t", type: .signed(bytes: 2)))
        }
        #expect(error?.description == "`t`: 20.5 is not an s16: an integer from -32768 to 32767")
        #expect(FieldError.kindMismatch(field: "x", type: "u8").description == "`x`: value is not a u8")
        #expect(throws: FieldError.unknownFlag(field: "flags", flag: "bogus")) {
            try heartRate.encode([.flags(["bogus"]), .integer(1)])
        }
    }

    @Test func signedAndWideIntegersAreLittleEndianTwosComplement() throws {
        #expect(
            try ValueLayout.encode(.integer(-2), as: FieldSpec(name: "t", type: .signed(bytes: 2))) == [0xFE, 0xFF])
        #expect(
            try ValueLayout.encode(.integer(0x123456), as: FieldSpec(name: "c", type: .unsigned(bytes: 3)))
                == [0x56, 0x34, 0x12])
        #expect(ValueLayout([FieldSpec(name: "t", type: .signed(bytes: 2))]).decode([0xFE, 0xFF]) == [.integer(-2)])
    }

    @Test func sfloatEncodesBodyTemperatureWithOneDecimal() throws {
        // 36.6 C = 366 x 10^-1: exponent 0xF, mantissa 0x16E (IEEE 11073-20601 SFLOAT).
        let raw = try #require(MedicalFloat.encode(36.6, as: .sfloat))
        #expect(raw == 0xF16E)
        #expect(abs(MedicalFloat.decode(raw, as: .sfloat) - 36.6) < 1e-9)
    }

    @Test func medfloatEncodesTemperatureMeasurementAsTheSpecExample() throws {
        // 37.2 C in a Temperature Measurement: 0xFF000174 (exponent -1, mantissa 372).
        let bytes = try ValueLayout.encode(.real(37.2), as: FieldSpec(name: "temperature", type: .medfloat))
        #expect(bytes == [0x74, 0x01, 0x00, 0xFF])
    }

    @Test func medicalFloatSpecialValuesUseTheirReservedCodes() throws {
        #expect(MedicalFloat.encode(.nan, as: .sfloat) == 0x07FF)
        #expect(MedicalFloat.encode(.infinity, as: .sfloat) == 0x07FE)
        #expect(MedicalFloat.encode(-.infinity, as: .float) == 0x0080_0002)
        #expect(MedicalFloat.decode(0x0800, as: .sfloat).isNaN)
        #expect(MedicalFloat.encode(1e300, as: .sfloat) == nil)
    }

    @Test func wholeNumbersKeepExponentZero() throws {
        #expect(MedicalFloat.encode(72, as: .sfloat) == 72)
        #expect(MedicalFloat.encode(-5, as: .sfloat) == 0x0FFB)
    }

    @Test func decodeRefusesBytesThatDoNotFitTheLayout() {
        #expect(heartRate.decode([0x06]) == nil)
        #expect(heartRate.decode([0x06, 72, 1]) == nil)
    }

    @Test func trailingTextTakesTheRest() throws {
        let layout = ValueLayout([FieldSpec(name: "id", type: .unsigned(bytes: 1)), FieldSpec(name: "s", type: .utf8)])
        let bytes = try layout.encode([.integer(1), .text("EOM")])
        #expect(bytes == [1, 0x45, 0x4F, 0x4D])
        #expect(layout.decode(bytes) == [.integer(1), .text("EOM")])
    }
}
