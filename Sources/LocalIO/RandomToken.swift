/// A secret for a URL: the live view's token, on the host and in the lab's VM alike.
public enum RandomToken {
    /// 128 bits from the system's generator (`getrandom`), as 32 lowercase hex digits: unguessable, and plain in
    /// a URL, a cookie and a shell word.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        return String(
            (0..<16).flatMap { _ in
                let byte = UInt8.random(in: .min ... .max, using: &generator)
                return [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            })
    }
}
