/// SplitMix64 (Steele, Lea and Flood, "Fast Splittable Pseudorandom Number Generators", OOPSLA 2014): a tiny
/// generator whose output depends only on its seed, so a profile's `seed` reproduces the same walk on every platform.
///
/// `SystemRandomNumberGenerator` is not seedable and Foundation's generators differ between platforms; this is
/// integer arithmetic only, so Linux and macOS agree bit for bit.
public struct SplitMix64: RandomNumberGenerator, Hashable, Sendable {
    private var state: UInt64

    /// A generator that starts from `seed`; equal seeds give equal sequences.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A double in `0..<1` from the top 53 bits, computed without platform floating-point library calls.
    public mutating func nextUnitInterval() -> Double { Double(next() >> 11) * 0x1p-53 }
}
