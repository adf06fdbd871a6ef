/// One thing `blemu doctor` checked on the host: what it found and, when that is not ok, the one thing to do.
///
/// The ids are stable (scripts and CI match on them): docs/bluez.md lists each.
public struct HostFinding: Sendable, Equatable {
    /// How the check came out.
    public enum Status: String, Sendable, CaseIterable, Comparable {
        /// Nothing to do.
        case ok
        /// Works, but changes what a central sees or may bite later.
        case warn
        /// blemu cannot serve a profile here until it is fixed.
        case fail
        /// Not checked: something it needs failed first, or it was not asked for.
        case skip

        /// ok < skip < warn < fail: the verdict is the worst status.
        private var rank: Int {
            switch self {
            case .ok: 0
            case .skip: 1
            case .warn: 2
            case .fail: 3
            }
        }

        /// Orders by severity.
        public static func < (lhs: Status, rhs: Status) -> Bool { lhs.rank < rhs.rank }
    }

    /// A stable name: "adapter-powered", "kernel-bluez-pair".
    public let id: String
    /// The outcome.
    public let status: Status
    /// What was found, in one line.
    public let detail: String
    /// The one thing to do; nil when the status is ok or skip.
    public let fix: String?

    /// A finding; `fix` is dropped when the status needs none.
    public init(_ id: String, _ status: Status, _ detail: String, fix: String? = nil) {
        self.id = id
        self.status = status
        self.detail = detail
        self.fix = status == .warn || status == .fail ? fix : nil
    }
}
