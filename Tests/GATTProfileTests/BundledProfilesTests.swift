import Foundation
import GATTModel
import GATTProfile
import Serving
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

    /// The bundled profiles validate with no diagnostic at all. They emulate firmware, which sends its
    /// whole name (`scan-response: full`); the Core Bluetooth cut is shown by the lab's own fixture.
    @Test(arguments: files.map(\.path))
    func everyBundledProfileLoadsWithoutDiagnostics(path: String) {
        let result = BlueZProfileCheck.checked(ProfileLoader.load(path: path))
        #expect(result.diagnostics.isEmpty, "\(result.renderedDiagnostics)")
        #expect(result.profile != nil)
    }
}

@Suite struct FormatDocumentationTests {
    @Test func theAnnotatedExampleInTheFormatDocumentIsAValidProfile() throws {
        let text = try String(
            contentsOf: Repository.root.appendingPathComponent("docs/profile-format.md"), encoding: .utf8)
        let start = try #require(text.range(of: "```yaml\n"))
        let end = try #require(text.range(of: "```", range: start.upperBound..<text.endIndex))
        let result = BlueZProfileCheck.checked(
            ProfileLoader.decode(text: String(text[start.upperBound..<end.lowerBound]), fileName: "example"))
        #expect(
            result.diagnostics.map(\.message) == [
                "local name \"Polar H10 A1B2\" is advertised shortened to \"Polar H1\" (8 of 14 bytes)"
            ], "\(result.renderedDiagnostics)")
    }
}
