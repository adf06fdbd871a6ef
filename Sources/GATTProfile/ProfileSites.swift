import GATTModel

/// The parts of a profile that a stack's own checks speak of, each with where it was written, so a check that knows
/// the stack (BlueZ's, in Serving) reports at `file:line:col` as the decoder does, while the decoder itself stays
/// free of any stack: the profile is data, and what bluetoothd makes of it is asked by whoever serves it. Filled
/// even when the profile has errors, so those checks speak of every part that decoded.
public struct ProfileSites: Sendable {
    /// An ATT error the profile answers a request with (a write rule's `validate` or `reject`, a fault's `reject`).
    public struct ErrorAnswer: Sendable {
        /// The error.
        public var error: ATTError
        /// The operations it answers.
        public var operations: [AttributeOperation]
        /// Where it was written.
        public var mark: Mark
    }

    /// The file the diagnostics name.
    public var file: String
    /// The advertisement as decoded, when it decoded.
    public var advertisement: Advertisement?
    /// Each advertised service UUID's first entry in `service-uuids`.
    public var advertisedServices: [BluetoothUUID: Mark] = [:]
    /// Where `local-name` was written.
    public var localName: Mark?
    /// Every ATT error the behaviour answers with, in file order.
    public var errorAnswers: [ErrorAnswer] = []

    /// Empty sites for `file`.
    public init(file: String) { self.file = file }

    /// A warning at `mark`, labelled with this file.
    public func warning(at mark: Mark, _ message: String, hint: String? = nil) -> Diagnostic {
        Diagnostic(file: file, line: mark.line, column: mark.column, severity: .warning, message: message, hint: hint)
    }
}
