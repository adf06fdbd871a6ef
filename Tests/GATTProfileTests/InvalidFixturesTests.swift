import Foundation
import GATTProfile
import Serving
import Testing

/// fixtures/invalid: each file opens with one `# expect: line:column: severity: message; hint` comment per
/// diagnostic it must produce, in order, and must produce exactly those.
@Suite struct InvalidFixturesTests {
    static let files = Repository.yamlFiles(in: "fixtures/invalid")

    /// The `# expect:` lines at the top of a fixture.
    static func expectations(in text: String) -> [String] {
        let prefix = "# expect: "
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { $0.hasPrefix("#") }
            .filter { $0.hasPrefix(prefix) }
            .map { String($0.dropFirst(prefix.count)) }
    }

    /// The parameterized test below passes with no case at all when the directory is not found: this one does not.
    @Test func theFixtureDirectoryIsFoundAndEveryFileInItIsAProfile() throws {
        #expect(!Self.files.isEmpty, "fixtures/invalid was not found from the test's working directory")
        let listed = try FileManager.default.contentsOfDirectory(
            atPath: Repository.root.appendingPathComponent("fixtures/invalid").path)
        #expect(listed.allSatisfy { $0.hasSuffix(".yaml") }, "a fixture the suite would skip: \(listed.sorted())")
    }

    @Test(arguments: files.map(\.path))
    func everyInvalidFixtureProducesExactlyTheDiagnosticsItNames(path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let expected = Self.expectations(in: text)
        #expect(!expected.isEmpty, "\(path) names no `# expect:` diagnostic")
        let result = BlueZProfileCheck.checked(ProfileLoader.load(path: path))
        let actual = result.diagnostics.map(\.positionedMessage)
        let rendered = actual.map { "# expect: \($0)" }.joined(separator: "\n")
        #expect(actual == expected, "actual:\n\(rendered)")
        #expect(result.diagnostics.allSatisfy { $0.file == path })
    }
}
