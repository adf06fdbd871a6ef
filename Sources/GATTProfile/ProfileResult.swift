/// What loading a profile gives: the profile when it has no errors, and every diagnostic found.
public struct ProfileResult: Sendable {
    /// The decoded profile; nil when any diagnostic is an error.
    public var profile: PeripheralProfile?
    /// Every error and warning, in file order.
    public var diagnostics: [Diagnostic]

    /// A result from its parts.
    public init(profile: PeripheralProfile?, diagnostics: [Diagnostic]) {
        self.profile = profile
        self.diagnostics = diagnostics
    }

    /// Whether any diagnostic is an error.
    public var hasErrors: Bool { diagnostics.containsErrors }

    /// The diagnostics rendered one per line, `file:line:column: severity: message; hint`.
    public var renderedDiagnostics: String { diagnostics.map(\.description).joined(separator: "\n") }
}
