import Glibc

extension String {
    /// The string at `cString`, which is `last` itself when the two are equal (compared in place, no copy): a name
    /// or path met again is not built again. The lengths are compared too, so a `last` holding a NUL byte never
    /// passes for the shorter C string `strcmp` would stop at.
    init(cString: UnsafePointer<CChar>, reusing last: String?) {
        if let last, last.withCString({ strcmp($0, cString) == 0 }), last.utf8.count == strlen(cString) {
            self = last
        } else {
            self.init(cString: cString)
        }
    }
}
