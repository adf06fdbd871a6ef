/// Pairing and security settings: what the agent answers and whether bonds are kept.
public struct PairingSettings: Hashable, Sendable {
    /// The IO capability the agent declares, which decides the pairing method (Core Spec Vol 3, Part H, 2.3.5.1).
    public var ioCapability: IOCapability
    /// A fixed passkey the agent displays or enters, for reproducible authenticated pairing in CI.
    public var passkey: UInt32?
    /// Whether pairings are kept as bonds.
    public var isBondable: Bool

    /// Settings from their parts; Just Works (no input, no output) by default.
    public init(ioCapability: IOCapability = .noInputNoOutput, passkey: UInt32? = nil, isBondable: Bool = true) {
        self.ioCapability = ioCapability
        self.passkey = passkey
        self.isBondable = isBondable
    }
}

/// An IO capability a pairing agent can declare, in profile spelling.
public enum IOCapability: String, Hashable, Sendable, CaseIterable {
    /// Can show a passkey, cannot confirm.
    case displayOnly = "display-only"
    /// Can show a passkey and answer yes/no.
    case displayYesNo = "display-yes-no"
    /// Can enter a passkey, cannot show one.
    case keyboardOnly = "keyboard-only"
    /// Neither: Just Works pairing, encrypted but unauthenticated.
    case noInputNoOutput = "no-input-no-output"
    /// Can show and enter a passkey.
    case keyboardDisplay = "keyboard-display"
}
