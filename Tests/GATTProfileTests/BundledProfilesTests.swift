import Foundation
import GATTModel
import GATTProfile
import Testing

@Suite struct BundledProfilesTests {
    static let files = Repository.yamlFiles(in: "profiles")

    @Test func theRepositoryBundlesTheIssuesProfiles() {
        let names = Set(Self.files.map(\.lastPathComponent))
        for required in [
            "heart-rate.yaml", "thermostat.yaml", "battery.yaml", "device-information.yaml",
            "health-thermometer.yaml", "cycling-speed-cadence.yaml", "secure.yaml", "transfer.yaml",
        ] {
            #expect(names.contains(required), "profiles/\(required) is missing")
        }
    }

    /// The only warning a bundled profile may carry is the deliberate one: a name shortened as Core Bluetooth
    /// shortens it (`scan-response: core-bluetooth`, 8 bytes), which the heart-rate strap shows on purpose.
    @Test(arguments: files.map(\.path))
    func everyBundledProfileLoadsWithoutDiagnosticsButADeliberatelyShortenedName(path: String) {
        let result = ProfileLoader.load(path: path)
        #expect(
            result.diagnostics.allSatisfy { $0.severity == .warning && $0.message.contains("is advertised shortened") },
            "\(result.renderedDiagnostics)")
        #expect(result.profile != nil)
    }
}

@Suite struct FormatDocumentationTests {
    @Test func theAnnotatedExampleInTheFormatDocumentIsAValidProfile() throws {
        let text = try String(
            contentsOf: Repository.root.appendingPathComponent("docs/profile-format.md"), encoding: .utf8)
        let start = try #require(text.range(of: "```yaml\n"))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let result = ProfileLoader.decode(text: String(text[start.upperBound..<end.lowerBound]), fileName: "example")
        #expect(
            result.diagnostics.map(\.message) == [
                "local name \"Polar H10 A1B2\" is advertised shortened to \"Polar H1\" (8 of 14 bytes)"
            ], "\(result.renderedDiagnostics)")
    }
}
