/// A request's line and headers as the view reads them (RFC 9112, sections 3 and 5): the method, the path and query
/// of the target, and the header fields by lowercased name. The view answers GET alone and reads no body.
struct HTTPRequestHead: Sendable {
    /// The method, as sent ("GET").
    var method: String
    /// The target's path, before any `?` ("/app.js").
    var path: String
    /// The target's query as name and value pairs, percent-decoded, in order.
    var query: [(name: String, value: String)]
    /// Every header field, names lowercased, values trimmed, in order (a name may repeat).
    var fields: [(name: String, value: String)]

    /// The longest head read: a browser's is under 2 KiB; more is refused rather than buffered.
    static let longest = 16 * 1024

    /// The first value of the field `name` (lowercase), if any.
    func field(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of the field `name` (lowercase), in order.
    func fields(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    /// The value of `name` in the query, if any.
    func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// Whether the comma-separated field `name` holds `token`, compared without case (`Connection: keep-alive,
    /// Upgrade`).
    func field(_ name: String, contains token: String) -> Bool {
        fields(name).contains { value in
            value.split(separator: ",").contains { $0.trimmingWhitespace().lowercased() == token.lowercased() }
        }
    }

    /// The head in `bytes` (up to, not including, the empty line), or nil when it is not an HTTP/1.x request.
    init?(parsing bytes: some Collection<UInt8>) {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false).makeIterator()
        guard let requestLine = lines.next() else { return nil }
        let parts = requestLine.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[1].hasPrefix("/"), parts[2].hasPrefix("HTTP/1.") else {
            return nil
        }
        method = String(parts[0])
        let target = parts[1]
        path = String(target.prefix { $0 != "?" })
        query = target.drop { $0 != "?" }.dropFirst().split(separator: "&").map { pair in
            let halves = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.percentDecoded(halves[0]), halves.count > 1 ? Self.percentDecoded(halves[1]) : "")
        }
        fields = []
        while let line = lines.next(), !line.isEmpty {
            // A line without a colon, or a name with a space before the colon, is malformed: the whole request is.
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line[..<colon].contains(where: \.isWhitespace)
            else { return nil }
            fields.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingWhitespace()))
        }
    }

    /// `text` with `%XX` escapes and `+` (a form's space) decoded; an escape that is not two hex digits stays as it
    /// is.
    static func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
