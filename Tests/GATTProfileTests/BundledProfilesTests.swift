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

    @Test(arguments: files.map(\.path))
    func everyBundledProfileLoadsWithoutDiagnostics(path: String) {
        let result = ProfileLoader.load(path: path)
        #expect(result.diagnostics.isEmpty, "\(result.renderedDiagnostics)")
        #expect(result.profile != nil)
    }
}
