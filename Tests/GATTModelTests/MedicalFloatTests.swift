import Foundation
import GATTModel
import Testing

/// IEEE 11073-20601 SFLOAT and FLOAT (Personal Health Devices Transcoding, 2.2.2 and 2.2.3) over their whole range.
struct MedicalFloatTests {
    /// The exponent encoded in `raw`'s top bits, sign-extended.
    private func exponent(_ raw: UInt32, _ format: MedicalFloat.Format) -> Int {
        let (bits, width) = format == .sfloat ? (12, 4) : (24, 8)
        let field = Int32(bitPattern: (raw >> UInt32(bits)) << UInt32(32 - width))
        return Int(field >> Int32(32 - width))
    }

    /// Values spread evenly over `decades` powers of ten, either sign: a Weyl sequence (the fractional parts of
    /// n times the golden ratio), which covers the range without clumping and repeats exactly, so a failure names
    /// a value that fails again.
    private struct Numbers {
        var position = 0.0
        mutating func value(decades: ClosedRange<Double>) -> Double {
            position = (position + 0.618_033_988_749_894_9).truncatingRemainder(dividingBy: 1)
            let magnitude = pow(10, decades.lowerBound + position * (decades.upperBound - decades.lowerBound))
            return Int(position * 1e9) % 2 == 0 ? magnitude : -magnitude
        }
    }

    @Test(arguments: [
        (MedicalFloat.Format.sfloat, -8.0...6.0), (MedicalFloat.Format.float, -120.0...125.0),
    ])
    func everyValueInRangeComesBackWithinHalfAUnitOfItsLastPlace(
        format: MedicalFloat.Format, decades: ClosedRange<Double>
    ) throws {
        var numbers = Numbers()
        for _ in 0..<20_000 {
            let value = numbers.value(decades: decades)
            let raw = try #require(MedicalFloat.encode(value, as: format), "\(value) did not encode")
            let unit = pow(10, Double(exponent(raw, format)))
            let back = MedicalFloat.decode(raw, as: format)
            #expect(abs(back - value) <= unit / 2 * (1 + 1e-9), "\(value) came back as \(back)")
            #expect(back != 0 || abs(value) < unit, "\(value) encoded as zero")
        }
    }

    @Test func aTemperatureFromARandomWalkIsNotEncodedAsZero() throws {
        // The health thermometer's walk produced this and sent 00 00 00 0B (0 x 10^11).
        let raw = try #require(MedicalFloat.encode(36.612345678, as: .float))
        #expect(raw == 0xFB37_DDB3)  // 3661235 x 10^-5
        #expect(abs(MedicalFloat.decode(raw, as: .float) - 36.61235) < 1e-9)
    }

    @Test func exactValuesKeepTheirShortestMantissa() {
        #expect(MedicalFloat.encode(36.6, as: .sfloat) == 0xF16E)
        #expect(MedicalFloat.encode(72, as: .float) == 72)
        #expect(MedicalFloat.encode(0, as: .float) == 0)
        #expect(MedicalFloat.encode(-1.5, as: .sfloat) == 0xFFF1)
        #expect(MedicalFloat.encode(12_000, as: .sfloat) == 0x1_4B0)  // 1200 x 10^1
    }

    @Test func theReservedCodesAreTheStandards() {
        #expect(MedicalFloat.encode(.nan, as: .float) == 0x007F_FFFF)
        #expect(MedicalFloat.encode(.infinity, as: .float) == 0x007F_FFFE)
        #expect(MedicalFloat.encode(-.infinity, as: .sfloat) == 0x0802)
        for code: UInt32 in [0x07FF, 0x0800, 0x0801] { #expect(MedicalFloat.decode(code, as: .sfloat).isNaN) }
        #expect(MedicalFloat.decode(0x07FE, as: .sfloat) == .infinity)
        #expect(MedicalFloat.decode(0x0080_0002, as: .float) == -.infinity)
    }

    @Test func magnitudesBeyondTheFormatAreRefusedAndTinyOnesBecomeZero() {
        #expect(MedicalFloat.encode(MedicalFloat.Format.sfloat.largestMagnitude * 1.01, as: .sfloat) == nil)
        #expect(MedicalFloat.encode(1e-12, as: .sfloat) == 0x8000)  // 0 x 10^-8
    }
}
