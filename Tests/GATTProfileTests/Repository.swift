import Foundation

/// Paths in the repository, found from this file's path so tests run from any working directory.
enum Repository {
    /// The repository root: two levels above Tests/GATTProfileTests.
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The YAML files in a directory of the repository, sorted by name.
    static func yamlFiles(in directory: String) -> [URL] {
        let url = root.appendingPathComponent(directory)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().map { url.appendingPathComponent($0) }
    }
}
