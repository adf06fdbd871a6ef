import FoundationEssentials

extension Verification {
    /// The verification as a test run reads: one line per check, what was expected and seen under each failure
    /// and skip, then the counts.
    public var text: String {
        var lines = ["verify \"\(profile)\" against \(address), via \(adapter)"]
        for check in checks {
            let label = "\(check.category.rawValue) \(check.subject) \(check.check)"
            switch check.status {
            case .pass: lines.append("pass  \(label): \(check.actual)")
            case .fail:
                lines.append("FAIL  \(label)\n        expected: \(check.expected)\n        actual:   \(check.actual)")
            case .skip: lines.append("skip  \(label): \(check.actual)")
            }
        }
        lines.append(
            "\(checks.count) checks: \(count(.pass)) passed, \(count(.fail)) failed, \(count(.skip)) skipped"
                + (conforms ? "; the device conforms" : ""))
        return lines.joined(separator: "\n") + "\n"
    }

    /// The verification as JSON: the device, every check, and the counts.
    public var json: String {
        struct Document: Encodable {
            var profile: String
            var address: String
            var adapter: String
            var conforms: Bool
            var passed: Int
            var failed: Int
            var skipped: Int
            var checks: [Check]
        }
        return ProbeReport.prettyJSON(
            Document(
                profile: profile, address: address, adapter: adapter, conforms: conforms, passed: count(.pass),
                failed: count(.fail), skipped: count(.skip), checks: checks))
    }

    /// The verification as JUnit XML: one test case per check (class name: its category), so CI lists each.
    public var junit: String {
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8"?>"#,
            "<testsuites tests=\"\(checks.count)\" failures=\"\(count(.fail))\" skipped=\"\(count(.skip))\">",
            "  <testsuite name=\"\(Self.escaped("blemu verify \(profile) against \(address)"))\" "
                + "tests=\"\(checks.count)\" failures=\"\(count(.fail))\" skipped=\"\(count(.skip))\">",
        ]
        for check in checks {
            let open =
                "    <testcase classname=\"\(check.category.rawValue)\" "
                + "name=\"\(Self.escaped("\(check.subject) \(check.check)"))\""
            switch check.status {
            case .pass:
                lines.append(open + "/>")
            case .fail:
                let message = Self.escaped("expected \(check.expected), actual \(check.actual)")
                lines += [open + ">", "      <failure message=\"\(message)\"/>", "    </testcase>"]
            case .skip:
                lines += [open + ">", "      <skipped message=\"\(Self.escaped(check.actual))\"/>", "    </testcase>"]
            }
        }
        lines += ["  </testsuite>", "</testsuites>"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// `text` with XML's five special characters escaped, for an attribute value; control characters, which XML 1.0
    /// cannot carry even as references (a device name may hold any byte), become U+FFFD.
    static func escaped(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" && $0 != "\n" }) {
                escaped += "\u{FFFD}"
                continue
            }
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
