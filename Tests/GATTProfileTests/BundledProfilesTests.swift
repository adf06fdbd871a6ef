import Foundation
import GATTModel
import GATTProfile
import Testing

@Suite struct BundledProfilesTests {
    static let files = Repository.yamlFiles(in: "profiles")

    @Test(arguments: files.map(\.path))
    func everyBundledProfileLoadsWithoutDiagnostics(path: String) {
        let result = ProfileLoader.load(path: path)
        #expect(result.diagnostics.isEmpty, "\(result.renderedDiagnostics)")
        #expect(result.profile != nil)
    }
}
