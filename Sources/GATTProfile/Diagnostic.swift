/// A problem found in a profile, at a 1-based line and column of its file, rendered like a compiler's
/// `file:line:column: error: message` so editors and CI logs can jump to it.
public struct Diagnostic: Hashable, Sendable, CustomStringConvertible {
    /// How bad a problem is.
    public enum Severity: String, Hashable, Sendable {
        /// The profile cannot be used.
        case error
        /// The profile works, but probably not as its author expects.
        case warning
    }

    /// The file name as given to the decoder (a path, or a label such as `<stdin>`).
    public var file: String
    /// The 1-based line, from libyaml's mark.
    public var line: Int
    /// The 1-based column, from libyaml's mark.
    public var column: Int
    /// Error or warning.
    public var severity: Severity
    /// What is wrong, one line.
    public var message: String
    /// A suggestion, e.g. "did you mean `notify`?"; nil when there is none.
    public var hint: String?

    /// A diagnostic from its parts.
    public init(file: String, line: Int, column: Int, severity: Severity, message: String, hint: String? = nil) {
        self.file = file
        self.line = line
        self.column = column
        self.severity = severity
        self.message = message
        self.hint = hint
    }

    /// `line:column: severity: message; hint` without the file name: the form fixtures expect.
    public var positionedMessage: String {
        "\(line):\(column): \(severity.rawValue): \(message)" + (hint.map { "; \($0)" } ?? "")
    }

    /// `file:line:column: severity: message; hint`.
    public var description: String { "\(file):\(positionedMessage)" }
}

extension Array where Element == Diagnostic {
    /// Whether any diagnostic is an error (warnings alone leave a profile usable).
    public var containsErrors: Bool { contains { $0.severity == .error } }
}
