/// Versions and release names in the order a person reads them: runs of digits compare as numbers, so "5.9" <
/// "5.66" < "5.82" and "6.1.0-27" < "6.12.0-1" (what Foundation's `.numeric` comparison did, without Foundation).
enum NumericOrder {
    /// Whether `a` comes before `b`.
    static func ascending(_ a: String, _ b: String) -> Bool {
        var left = a.utf8[...]
        var right = b.utf8[...]
        while let l = left.first, let r = right.first {
            if isDigit(l) && isDigit(r) {
                let leftRun = digitRun(&left)
                let rightRun = digitRun(&right)
                // Equal numbers compare equal whatever their leading zeros: the text after them decides.
                if leftRun.count != rightRun.count { return leftRun.count < rightRun.count }
                if leftRun != rightRun { return leftRun.lexicographicallyPrecedes(rightRun) }
            } else {
                if l != r { return l < r }
                left = left.dropFirst()
                right = right.dropFirst()
            }
        }
        return left.isEmpty && !right.isEmpty
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// Takes the digits at the start of `text` and returns them without leading zeros.
    private static func digitRun(_ text: inout Substring.UTF8View.SubSequence) -> [UInt8] {
        let digits = text.prefix(while: isDigit)
        text = text.dropFirst(digits.count)
        return Array(digits.drop { $0 == UInt8(ascii: "0") })
    }
}
