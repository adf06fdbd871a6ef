/// The link security an operation requires (Core Spec Vol 3, Part C, 10.2): each level includes the ones below.
public enum SecurityLevel: Int, Comparable, Hashable, Sendable, CaseIterable {
    /// Any link.
    case none = 0
    /// An encrypted link (unauthenticated pairing such as Just Works is enough).
    case encrypted
    /// An encrypted link from authenticated (MITM-protected) pairing.
    case authenticated
    /// An authenticated LE Secure Connections link.
    case secure

    /// The profile spelling: `none`, `encrypted`, `authenticated`, `secure`.
    public var name: String {
        switch self {
        case .none: "none"
        case .encrypted: "encrypted"
        case .authenticated: "authenticated"
        case .secure: "secure"
        }
    }

    /// The level a profile spelling names, or nil.
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }

    /// Orders levels from none to secure.
    public static func < (lhs: SecurityLevel, rhs: SecurityLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The operations on an attribute that can each require a security level.
public enum AttributeOperation: String, Hashable, Sendable, CaseIterable {
    /// Reading the value.
    case read
    /// Writing the value.
    case write
    /// Subscribing to notifications (writing the CCCD).
    case notify
    /// Subscribing to indications (writing the CCCD).
    case indicate
}

/// The security level each operation requires; operations not listed require none.
public struct SecurityRequirements: Hashable, Sendable {
    /// The explicit levels, by operation.
    public private(set) var levels: [AttributeOperation: SecurityLevel]

    /// Requirements from explicit levels.
    public init(_ levels: [AttributeOperation: SecurityLevel] = [:]) {
        self.levels = levels.filter { $0.value != .none }
    }

    /// The level an operation requires.
    public subscript(operation: AttributeOperation) -> SecurityLevel {
        get { levels[operation] ?? .none }
        set { levels[operation] = newValue == .none ? nil : newValue }
    }

    /// Raises an operation's level to at least `level`.
    public mutating func require(_ level: SecurityLevel, for operation: AttributeOperation) {
        self[operation] = max(self[operation], level)
    }
}
