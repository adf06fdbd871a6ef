/// What `blemu verify` found: a profile's promises checked one by one against what a central saw of a device.
public struct Verification: Codable, Sendable, Equatable {
    /// One promise of the profile, checked.
    public struct Check: Codable, Sendable, Equatable {
        /// What part of the profile a check is about.
        public enum Category: String, Codable, Sendable, CaseIterable {
            /// The advertisement as scanned: name, service UUIDs, manufacturer and service data, appearance.
            case advertisement
            /// The GATT tree: services, characteristics with their properties, descriptors, the GAP name.
            case gatt
            /// What needs an encrypted or authenticated link.
            case security
            /// Values read: constants byte for byte, typed values by their fields.
            case value
            /// What the behaviour notifies or indicates.
            case notification
            /// Writes (only when asked for: they change the device).
            case write
        }

        /// The outcome of a check.
        public enum Status: String, Codable, Sendable {
            /// The device keeps the promise.
            case pass
            /// The device breaks it: `expected` and `actual` say how.
            case fail
            /// It could not be told from what a central sees: `actual` says why.
            case skip
        }

        /// What part of the profile it checks.
        public var category: Category
        /// The profile's id for what it checks (a service, characteristic or `characteristic/descriptor` id), or
        /// `advertisement`'s field; for what the profile does not declare, its UUID.
        public var subject: String
        /// The promise, in a few words: `present`, `properties`, `value`, `local-name`, `undeclared`.
        public var check: String
        /// Pass, fail or skip.
        public var status: Status
        /// What the profile says.
        public var expected: String
        /// What the central saw (or, for a skip, why it could not tell).
        public var actual: String

        /// A check from its parts.
        public init(
            _ category: Category, _ subject: String, _ check: String, _ status: Status, expected: String,
            actual: String
        ) {
            self.category = category
            self.subject = subject
            self.check = check
            self.status = status
            self.expected = expected
            self.actual = actual
        }
    }

    /// The profile's name.
    public var profile: String
    /// The device's address, as the central saw it.
    public var address: String
    /// The adapter the central used.
    public var adapter: String
    /// Every check, in the order made: advertisement, then the GATT tree service by service, then values.
    public var checks: [Check]

    /// A verification from its parts.
    public init(profile: String, address: String, adapter: String, checks: [Check]) {
        self.profile = profile
        self.address = address
        self.adapter = adapter
        self.checks = checks
    }

    /// How many checks have `status`.
    public func count(_ status: Check.Status) -> Int { checks.filter { $0.status == status }.count }

    /// Whether the device keeps every promise checked: no check failed.
    public var conforms: Bool { count(.fail) == 0 }
}
