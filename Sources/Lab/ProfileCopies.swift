/// How the lab serves a fleet: the same profile on several controllers, each copy a device of its own name.
///
/// A profile that says where its number goes (`name: Sensor {n}`) gets `{n}` replaced by the copy's number, 1 for
/// the first copy of that profile; one that does not, and runs more than once, keeps its text and `blemu run` adds
/// ` 2`, ` 3`... to the name and local name of the copies after the first (`--name-suffix`). A profile that runs once
/// is served as written.
public enum ProfileCopies {
    /// One peripheral's profile as the VM serves it.
    public struct Copy: Sendable, Equatable {
        /// The profile text, `{n}` replaced.
        public var text: String
        /// What `blemu run` adds to the names (`--name-suffix`), if anything.
        public var nameSuffix: String?
    }

    /// The placeholder a profile may put in its name.
    public static let placeholder = "{n}"

    /// The copies of `profiles` (path and text, in controller order).
    public static func plan(_ profiles: [(path: String, text: String)]) -> [Copy] {
        var totals: [String: Int] = [:]
        for profile in profiles { totals[profile.path, default: 0] += 1 }
        var seen: [String: Int] = [:]
        return profiles.map { profile in
            seen[profile.path, default: 0] += 1
            let number = seen[profile.path] ?? 1
            if profile.text.contains(placeholder) {
                return Copy(text: profile.text.replacing(placeholder, with: String(number)), nameSuffix: nil)
            }
            let isFleet = (totals[profile.path] ?? 1) > 1
            return Copy(text: profile.text, nameSuffix: isFleet && number > 1 ? " \(number)" : nil)
        }
    }
}
