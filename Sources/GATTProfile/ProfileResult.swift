/// What loading a profile gives: the profile when it has no errors, and every diagnostic found.
public struct ProfileResult: Sendable {
    /// The decoded profile; nil when any diagnostic is an error.
    public var profile: PeripheralProfile?
    /// Every error and warning, in file order.
    public var diagnostics: [Diagnostic]
    /// The parts a stack's own checks speak of, with where each was written.
    public var sites: ProfileSites

    /// A result from its parts.
    public init(profile: PeripheralProfile?, diagnostics: [Diagnostic], sites: ProfileSites) {
        self.profile = profile
        self.diagnostics = diagnostics
        self.sites = sites
    }

    /// This result with `more` diagnostics (a stack's checks) among its own, in file order; at one position the
    /// decoder's come first.
    public func adding(_ more: [Diagnostic]) -> ProfileResult {
        var result = self
        result.diagnostics = (diagnostics + more).enumerated().sorted {
            ($0.element.line, $0.element.column, $0.offset) < ($1.element.line, $1.element.column, $1.offset)
        }.map(\.element)
        return result
    }

    /// Whether any diagnostic is an error.
    public var hasErrors: Bool { diagnostics.containsErrors }

    /// The diagnostics rendered one per line, `file:line:column: severity: message; hint`.
    public var renderedDiagnostics: String { diagnostics.map(\.description).joined(separator: "\n") }
}
