import ControlProtocol
import Dispatch
import GATTModel
import GATTProfile
import LocalIO
import Logging
import Peripheral
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// State restoration's file: the values centrals wrote and who was subscribed, for one restore identifier, so a
/// crashed or restarted emulator comes back as the centrals left it (Core Bluetooth's state preservation).
///
/// Every change is written atomically (temp file, fsync, rename, fsync of the directory), so a crash at any moment
/// leaves the previous or the new file, never half of one. The writing happens on a queue of its own, never on the
/// caller's thread: `recordWrites` returns once the change is on disk, and changes made while a file is being
/// written are committed together by the next one (group commit), so the request path neither blocks on the disk nor
/// acknowledges a write before it is durable. The file carries a version, the profile's
/// name and a fingerprint of its GATT tree: a corrupt or foreign file (bad JSON, another version or profile) is
/// reported in one log line, renamed aside to `*.corrupt-<timestamp>` and never fatal.
public final class StateStore: Sendable {
    /// The file format this code writes and reads.
    public static let version = 1

    /// The state file: `<directory>/<restoreID>.json`.
    public let path: String
    private let profileName: String
    private let fingerprint: String
    private let profile: PeripheralProfile
    private let logger: Logger
    private let state: Mutex<Snapshot>
    /// Which change is on disk, who waits for which, and whether the writer queue is at work.
    private let commits = Mutex(Commits())
    /// Where files are written: fsync may take milliseconds, and no request's thread may wait on it.
    private let writer = DispatchQueue(label: "blemu.state-store")

    private struct Snapshot: Sendable {
        var values: [String: [UInt8]] = [:]
        var subscriptions: [String: [String]] = [:]
        /// Counts the changes: the file written from this snapshot makes every change up to it durable.
        var generation = 0
    }

    private struct Commits {
        /// The newest generation written (or whose write failed and was said).
        var durable = 0
        /// Whether a writer is at work; it keeps writing until nothing newer than `durable` is left.
        var isWriting = false
        /// Callers waiting for their generation to be durable.
        var waiters: [(generation: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// The file's JSON object: `version`, `profile`, `fingerprint`, `values` (id to hex) and `subscriptions` (id to
    /// centrals), written with sorted keys and two-space indentation.
    fileprivate struct File {
        var version: Int
        var profile: String
        var fingerprint: String
        var values: [String: String]
        var subscriptions: [String: [String]]

        var json: JSONValue {
            .object([
                "version": .integer(Int64(version)), "profile": .string(profile), "fingerprint": .string(fingerprint),
                "values": .object(values.mapValues(JSONValue.string)),
                "subscriptions": .object(subscriptions.mapValues { .array($0.map(JSONValue.string)) }),
            ])
        }
    }

    /// Removes `<file>.tmp-<pid>` files whose process is gone: `kill -9` during a save leaves one each time (the
    /// rename never came), and nothing else would ever remove them. A live process's file is its save in progress.
    func removeStaleTemporaries() {
        let (directory, fileName) = LocalFile.split(path)
        let prefix = fileName + ".tmp-"
        for name in Self.entries(of: directory) where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                unlink(directory + "/" + name)
                logger.info("removed \(name), left by a run that ended during a save")
            }
        }
    }

    /// Where state files go by default: `$XDG_STATE_HOME/blemu`, else `~/.local/state/blemu`.
    public static var defaultDirectory: String {
        if let home = getenv("XDG_STATE_HOME").map({ String(cString: $0) }), home.hasPrefix("/") {
            return home + "/blemu"
        }
        // $HOME, else the password database's home directory, as NSHomeDirectory() would.
        let home =
            getenv("HOME").map { String(cString: $0) } ?? getpwuid(getuid()).map { String(cString: $0.pointee.pw_dir) }
        return (home ?? "/") + "/.local/state/blemu"
    }

    /// A store for `profile` under `restoreID` (a file name: `/` is replaced) in `directory`, by default
    /// `defaultDirectory`. Touches nothing on disk until `restore()` or a change.
    public init(
        restoreID: String, directory: String? = nil, profile: PeripheralProfile,
        logger: Logger = Logger(label: "blemu.state")
    ) {
        let name = String(restoreID.map { $0 == "/" ? "_" : $0 })
        path = (directory ?? Self.defaultDirectory) + "/" + name + ".json"
        profileName = profile.name
        fingerprint = Self.fingerprint(of: profile)
        self.profile = profile
        self.logger = logger
        state = Mutex(Snapshot())
    }

    /// Loads the previous run's state for `PeripheralManager(restoring:)` and the `ValueStore`; nil when there is
    /// none. A corrupt or foreign file is logged, renamed aside, and gives nil: the run starts fresh. Temporary
    /// files a killed run left mid-save are removed first.
    public func restore() -> RestoredState? {
        removeStaleTemporaries()
        guard let bytes = try? LocalFile.bytes(atPath: path) else { return nil }
        let problem: String
        do {
            let file = try File(json: try JSONValue(parsing: String(decoding: bytes, as: UTF8.self)))
            if file.version != Self.version {
                problem = "version \(file.version), expected \(Self.version)"
            } else if file.profile != profileName || file.fingerprint != fingerprint {
                problem = "saved for profile \"\(file.profile)\" (\(file.fingerprint)), not this one"
            } else if let decoded = Self.decode(file.values) {
                let values = accepted(decoded)
                state.withLock { $0 = Snapshot(values: values, subscriptions: file.subscriptions, generation: 0) }
                return RestoredState(values: values, subscriptions: file.subscriptions)
            } else {
                problem = "a value is not hex"
            }
        } catch {
            problem = "not a state file: \(error)"
        }
        let aside = path + ".corrupt-" + String(WallTime.now.millisecondsSince1970)
        let moved = rename(path, aside) == 0
        logger.warning(
            "state file \(path) ignored (\(problem)); \(moved ? "moved to \(aside)" : "could not move it aside")")
        return nil
    }

    /// The saved values that pass the checks a central's write of the whole value passes now (a writable,
    /// non-constant characteristic of this profile, within its maximum length, accepted by its write rules) and
    /// decode by its fields. A file edited by hand, or written before the profile's rules changed, must not serve what
    /// no central could have written; each value skipped is said in one warning naming it and the file.
    func accepted(_ values: [String: [UInt8]]) -> [String: [UInt8]] {
        var kept: [String: [UInt8]] = [:]
        let rules = try? WriteRules(profile: profile)
        for (id, value) in values.sorted(by: { $0.key < $1.key }) {
            let problem: String?
            if let characteristic = profile.characteristic(id: id) {
                var engine = rules
                // The write path's own checks: permissions and constants (ProfileServer), then the length
                // (WriteRequest.applied), on a link secure enough for any requirement.
                let refusal =
                    ProfileServer.error(for: .write, on: characteristic, linkSecurity: .secure)
                    ?? WriteRequest(characteristic: characteristic, offset: 0, value: value).applied(to: []).failure
                if let refusal {
                    problem = "a central's write of it would be refused with \(refusal)"
                } else if let layout = characteristic.layout, layout.decode(value) == nil {
                    problem = "\(value.count) bytes do not fit its fields"
                } else if case .reject(let error)? = engine?.write(value, to: id, at: .zero) {
                    problem = "its write rules refuse it with \(error)"
                } else {
                    problem = nil
                }
            } else {
                problem = "the profile has no such characteristic"
            }
            if let problem {
                logger.warning("state file \(path): saved value of `\(id)` not restored: \(problem)")
            } else {
                kept[id] = value
            }
        }
        return kept
    }

    /// Persists values written by centrals (merged over earlier ones), returning once they are on disk. A failed
    /// write is logged, never fatal.
    public func recordWrites(_ values: [String: [UInt8]]) async {
        await save { $0.values.merge(values) { _, new in new } }
    }

    /// Forgets every value centrals wrote (a `reset`), so a restart restores the profile's initial values; returns
    /// once that is on disk.
    public func forgetWrites() async {
        await save { $0.values = [:] }
    }

    /// Persists the current subscriptions (characteristic id to central ids), replacing the earlier ones; returns
    /// once they are on disk.
    public func recordSubscriptions(_ subscriptions: [String: [String]]) async {
        await save { $0.subscriptions = subscriptions }
    }

    /// The state as it would be restored now.
    public var current: RestoredState {
        state.withLock { RestoredState(values: $0.values, subscriptions: $0.subscriptions) }
    }

    /// Applies `change` to the snapshot and waits until a file holding it (or a newer one) is on disk.
    private func save(_ change: (inout Snapshot) -> Void) async {
        let generation = state.withLock { snapshot in
            change(&snapshot)
            snapshot.generation += 1
            return snapshot.generation
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (isDurable, startsWriter) = commits.withLock { commits -> (Bool, Bool) in
                guard commits.durable < generation else { return (true, false) }
                commits.waiters.append((generation, continuation))
                defer { commits.isWriting = true }
                return (false, !commits.isWriting)
            }
            if isDurable { continuation.resume() }
            if startsWriter { writer.async { [self] in commitAll() } }
        }
    }

    /// The writer queue's loop: writes the newest snapshot while it is newer than the file, then wakes everyone it
    /// made durable. Changes that arrive during a write are all carried by the next one.
    private func commitAll() {
        while true {
            // The generation is read under the commits lock, so a change counted after this check finds the writer
            // still at work and is carried by the next turn of this loop.
            let isDone = commits.withLock { commits -> Bool in
                guard commits.durable < state.withLock({ $0.generation }) else {
                    commits.isWriting = false
                    return true
                }
                return false
            }
            if isDone { return }
            let (file, generation) = state.withLock { snapshot in
                (
                    File(
                        version: Self.version, profile: profileName, fingerprint: fingerprint,
                        values: snapshot.values.mapValues(Self.hex), subscriptions: snapshot.subscriptions),
                    snapshot.generation
                )
            }
            do {
                try writeAtomically(Array((file.json.prettyText + "\n").utf8))
            } catch {
                logger.error("cannot save state to \(path): \(error)")
            }
            let durable = commits.withLock { commits in
                commits.durable = generation
                let (ready, waiting) = (
                    commits.waiters.filter { $0.generation <= generation },
                    commits.waiters.filter { $0.generation > generation }
                )
                commits.waiters = waiting
                return ready.map(\.continuation)
            }
            for continuation in durable { continuation.resume() }
        }
    }

    fileprivate struct FileError: Error, CustomStringConvertible {
        var description: String
    }

    private func writeAtomically(_ bytes: [UInt8]) throws(FileError) {
        let directory = LocalFile.split(path).directory
        try Self.makeDirectories(directory)
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileError(description: "\(temporary): \(String(cString: strerror(errno)))") }
        do { try LocalFile.writeAll(bytes, to: fd) } catch {
            SocketCalls.close(fd)
            unlink(temporary)
            throw FileError(description: "write: \(error)")
        }
        // The data must be on disk before the rename makes it the state file, or a crash could leave it empty.
        let synced = fsync(fd) == 0
        SocketCalls.close(fd)
        guard synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw FileError(description: "fsync or rename: \(String(cString: strerror(errno)))")
        }
        // And the rename itself must reach the disk: fsync the directory.
        let directoryFD = open(directory, O_RDONLY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            SocketCalls.close(directoryFD)
        }
    }

    /// FNV-1a over the services' and characteristics' ids and UUIDs: a different GATT tree means a foreign file.
    /// The names in a directory (without `.` and `..`); none when it cannot be read.
    private static func entries(of directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `mkdir -p`: each missing component of `directory`, mode 0777 less the umask, as FileManager made them.
    private static func makeDirectories(_ directory: String) throws(FileError) {
        var prefix = directory.hasPrefix("/") ? "/" : ""
        for component in directory.split(separator: "/") {
            prefix += component
            if mkdir(prefix, 0o777) != 0 && errno != EEXIST {
                throw FileError(description: "\(prefix): \(String(cString: strerror(errno)))")
            }
            prefix += "/"
        }
    }

    static func fingerprint(of profile: PeripheralProfile) -> String {
        var text = ""
        for service in profile.services {
            text += "S \(service.id) \(service.uuid)\n"
            for characteristic in service.characteristics { text += "C \(characteristic.id) \(characteristic.uuid)\n" }
        }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Bytes as the state file and the control socket spell them: `Hex`, uppercase, no separator.
    static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes, separator: "") }

    private static func decode(_ values: [String: String]) -> [String: [UInt8]]? {
        var decoded: [String: [UInt8]] = [:]
        for (id, hex) in values {
            guard let bytes = Hex.bytes(hex) else { return nil }
            decoded[id] = bytes
        }
        return decoded
    }
}

extension Result {
    /// The error of a failure, nil for a success.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}

// In an extension, so the memberwise initializer `save` uses stays.
extension StateStore.File {
    /// Decodes the object, or says which member is missing or of the wrong type.
    init(json: JSONValue) throws(StateStore.FileError) {
        func member<T>(_ key: String, _ read: (JSONValue) -> T?) throws(StateStore.FileError) -> T {
            guard let value = json[key].flatMap(read) else {
                throw StateStore.FileError(description: "no valid `\(key)`")
            }
            return value
        }
        version = try member("version") { $0.integer }
        profile = try member("profile") { $0.string }
        fingerprint = try member("fingerprint") { $0.string }
        values = try member("values") { value in
            let members = value.object?.compactMapValues(\.string)
            return members?.count == value.object?.count ? members : nil
        }
        subscriptions = try member("subscriptions") { value in
            let members = value.object?.compactMapValues(\.strings)
            return members?.count == value.object?.count ? members : nil
        }
    }
}
