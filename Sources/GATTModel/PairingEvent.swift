/// What the stack asked the peripheral's side during a pairing, and what it answered: a test that must type a
/// displayed passkey on its central reads it here (event log `pairing` lines, `blemu ctl SOCK pairing`).
public struct PairingEvent: Hashable, Sendable {
    /// How the stack asked.
    public enum Method: String, Hashable, Sendable {
        /// The stack displays `passkey`, which the central's user types (BlueZ `DisplayPasskey`: the kernel chose it).
        case displayPasskey = "display-passkey"
        /// The stack asked for a passkey to type; `passkey` is the one answered (the profile's), nil if none.
        case requestPasskey = "request-passkey"
        /// Numeric comparison: `passkey` is the number both sides show; confirmed.
        case confirmation
        /// Just Works: the pairing was authorized.
        case authorization
        /// The stack cancelled the pairing.
        case cancelled
    }

    /// The central pairing (BlueZ: the device's object path).
    public var central: String
    /// How the stack asked.
    public var method: Method
    /// The six-digit passkey shown or typed, when there is one.
    public var passkey: UInt32?
    /// Whether the peripheral's side accepted.
    public var accepted: Bool

    /// An event from its parts.
    public init(central: String, method: Method, passkey: UInt32? = nil, accepted: Bool = true) {
        self.central = central
        self.method = method
        self.passkey = passkey
        self.accepted = accepted
    }

    /// A passkey as a user types it: six digits, leading zeros kept ("004213").
    public static func spelled(_ passkey: UInt32) -> String {
        let digits = String(passkey)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }
}
