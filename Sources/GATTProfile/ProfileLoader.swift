import LocalIO

/// Loads profiles: YAML text -> `PeripheralProfile`, with every problem reported as a `Diagnostic`.
public enum ProfileLoader {
    /// Reads and decodes the profile at `path`; an unreadable or non-UTF-8 file is an error diagnostic at 1:1.
    public static func load(path: String) -> ProfileResult {
        guard let bytes = try? LocalFile.bytes(atPath: path) else {
            return failure(file: path, message: "cannot read the file")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return failure(file: path, message: "the file is not UTF-8 text")
        }
        return decode(text: text, fileName: path)
    }

    /// Decodes profile text; `fileName` only labels the diagnostics. Never traps, whatever the text.
    public static func decode(text: String, fileName: String) -> ProfileResult {
        var decoder = ProfileDecoder(file: fileName)
        let profile = decoder.decode(text: text)
        let diagnostics = decoder.sortedDiagnostics
        return ProfileResult(
            profile: diagnostics.containsErrors ? nil : profile, diagnostics: diagnostics, sites: decoder.sites)
    }

    private static func failure(file: String, message: String) -> ProfileResult {
        ProfileResult(
            profile: nil,
            diagnostics: [Diagnostic(file: file, line: 1, column: 1, severity: .error, message: message)],
            sites: ProfileSites(file: file))
    }
}
