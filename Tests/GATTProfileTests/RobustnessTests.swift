import Foundation
import GATTProfile
import Testing

/// A small deterministic generator (SplitMix64), so a failing mutation can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct RobustnessTests {
    static let pieces = [
        ":", "-", " ", "\n", "[", "]", "{", "}", "\"", "'", "&a", "*a", "!!str", "#", "0x", "-1",
        "99999999999999999999",
        "1e400", "nan", ".inf", "~", "\t", "\u{0}", "é", "notify", "write", "hex:", "text:", "fields:", "value:",
    ]

    /// One random edit: delete, insert, duplicate or drop a line, or truncate.
    static func mutate(_ text: String, using random: inout SplitMix64) -> String {
        var characters = Array(text)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        switch random.next() % 5 {
        case 0 where !characters.isEmpty:
            let at = Int(random.next() % UInt64(characters.count))
            characters.removeSubrange(at..<min(characters.count, at + Int(random.next() % 8) + 1))
            return String(characters)
        case 1:
            let at = Int(random.next() % UInt64(characters.count + 1))
            characters.insert(contentsOf: pieces[Int(random.next() % UInt64(pieces.count))], at: at)
            return String(characters)
        case 2 where !lines.isEmpty:
            let at = Int(random.next() % UInt64(lines.count))
            lines.insert(lines[at], at: Int(random.next() % UInt64(lines.count)))
            return lines.joined(separator: "\n")
        case 3 where !lines.isEmpty:
            lines.remove(at: Int(random.next() % UInt64(lines.count)))
            return lines.joined(separator: "\n")
        default:
            return String(characters.prefix(Int(random.next() % UInt64(characters.count + 1))))
        }
    }

    /// A 1 MB token where a UUID belongs was once echoed whole and searched for a suggestion (13 s).
    @Test func aHugeTokenIsEchoedCutAndGetsNoSuggestion() {
        let token = String(repeating: "x", count: 1_000_000)
        let text = "name: Big\nservices:\n  - id: s\n    uuid: \(token)\n    characteristics: []\n"
        let result = ProfileLoader.decode(text: text, fileName: "big.yaml")
        let messages = result.diagnostics.map(\.positionedMessage)
        #expect(messages.count == 1)
        #expect(messages.first?.contains("xxxxxxxxxx... (1000000 characters)") == true)
        #expect(messages.allSatisfy { $0.count < 300 }, "\(messages.map(\.count))")
        #expect(result.diagnostics.first?.hint == nil)
    }

    @Test(arguments: [
        "heart-rate.yaml", "thermostat.yaml", "transfer.yaml", "cycling-speed-cadence.yaml", "indoor-bike.yaml",
        "glucose-meter.yaml",
    ])
    func mutatedProfilesNeverCrashTheDecoder(name: String) throws {
        let original = try String(
            contentsOf: Repository.root.appendingPathComponent("profiles/\(name)"), encoding: .utf8)
        var random = SplitMix64(state: 0x5EED)
        for _ in 0..<400 {
            var text = original
            for _ in 0..<(1 + random.next() % 4) { text = Self.mutate(text, using: &random) }
            let result = ProfileLoader.decode(text: text, fileName: name)
            // Whatever the input: a model only without errors, and every diagnostic has a real position.
            #expect(result.hasErrors == (result.profile == nil))
            #expect(result.diagnostics.allSatisfy { $0.line >= 1 && $0.column >= 1 })
        }
    }

    @Test func deeplyNestedOrEmptyInputIsAnErrorNotACrash() {
        for text in [
            String(repeating: "[", count: 100_000), "", "   \n", "- 1\n- 2\n", "a: &x 1\nb: *x\n", "---\n---\n",
        ] {
            let result = ProfileLoader.decode(text: text, fileName: "x.yaml")
            #expect(result.hasErrors)
        }
    }
}
