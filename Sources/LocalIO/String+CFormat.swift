#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// `format` filled in by C's vsnprintf ("%.1f s", "%02X"), in the C locale a Swift program runs in: what
    /// Foundation's `String(format:)` did for the probe's, the CLI's and the lab's numbers, without bringing in
    /// Foundation's ICU data. Only C's conversions: no `%@`.
    package init(cFormat format: String, _ arguments: any CVarArg...) {
        // The length first, then the text: a va_list is used once, so each pass makes its own.
        let length = withVaList(arguments) { vsnprintf(nil, 0, format, $0) }
        guard length > 0 else {
            self = ""
            return
        }
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        _ = withVaList(arguments) { list in
            buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, format, list) }
        }
        self = String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
