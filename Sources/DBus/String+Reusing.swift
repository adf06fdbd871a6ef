import Glibc

extension String {
    /// The string at `cString`, which is `last` itself when the two are equal (compared in place, no copy): a name
    /// or path met again is not built again. `last` must hold no NUL byte, as a string read from a C string never
    /// does: `strcmp` stops at the first one. (Checking the lengths as well cost a request 125 instructions of
    /// `strlen` for the five names it reuses.)
    init(cString: UnsafePointer<CChar>, reusing last: String?) {
        if let last, last.withCString({ strcmp($0, cString) == 0 }) {
            self = last
        } else {
            self.init(cString: cString)
        }
    }
}
