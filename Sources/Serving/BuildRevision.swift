/// The git revision a release was built from. scripts/package writes the commit into its copy of the sources
/// before building; a build from a checkout has none, and `blemu --version` then prints the version alone.
public enum BuildRevision {
    /// blemu's version: `blemu --version`, `blemu mcp`'s server version, and the Python package's
    /// (python/pyproject.toml; a test keeps them equal).
    public static let version = "0.4.0"

    /// The commit, abbreviated, or nil for a build from a checkout.
    public static let commit: String? = nil

    /// What `blemu --version` prints: "0.4.0", or "0.4.0 (git 1a2b3c4)" for a packaged build.
    public static func versionLine(_ version: String = version) -> String {
        commit.map { "\(version) (git \($0))" } ?? version
    }
}
