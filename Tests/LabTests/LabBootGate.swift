import Foundation

/// Admits a bounded number of VM boots at a time. Every scenario boots its own VM (a fresh bluetoothd per story,
/// so one story's failure cannot taint another), and Swift Testing starts every suite at once: on a 2-core runner
/// more than two TCG guests at a time only make each one slower, until their bounded waits time out. A scenario
/// suite's time limit (`labSuiteTimeLimit`, 60 minutes) includes the time its cases wait here for other suites' boots:
/// with every scenario on three systems the queue alone passed 25 minutes.
///
/// Long boots are admitted before short ones. Every suite queues at once, so the order decides how the run ends:
/// admitted in arrival order, the two Profiles boots (five to eight minutes) came last and one core idled for three
/// of them; longest first, the short boots fill the gaps at the end.
actor LabBootGate {
    /// How long a boot keeps its slot, as far as admission order goes.
    enum Length: Sendable {
        /// Minutes of TCG or several VMs: ATT, Clone, Profiles, a shared air.
        case long
        /// About a minute or two.
        case short
    }

    /// The gate every scenario shares; `BLEMU_LAB_PARALLEL` sets its width (default 2).
    static let shared = LabBootGate(
        width: ProcessInfo.processInfo.environment["BLEMU_LAB_PARALLEL"].flatMap { Int($0) }.map { max(1, $0) } ?? 2)

    private let width: Int
    private var running = 0
    private var waitingLong: [CheckedContinuation<Void, Never>] = []
    private var waitingShort: [CheckedContinuation<Void, Never>] = []

    /// Boots waiting for a slot.
    var queued: Int { waitingLong.count + waitingShort.count }

    /// A gate admitting `width` boots at a time.
    init(width: Int) { self.width = width }

    /// Runs `body` once fewer than `width` others are running: long boots in arrival order, then short ones.
    func admitted<T: Sendable>(_ length: Length, _ body: @Sendable () async throws -> T) async throws -> T {
        if running < width {
            running += 1
        } else {
            // The slot is handed over by `leave`, so `running` already counts this boot when it resumes.
            await withCheckedContinuation { continuation in
                switch length {
                case .long: waitingLong.append(continuation)
                case .short: waitingShort.append(continuation)
                }
            }
        }
        defer { leave() }
        return try await body()
    }

    private func leave() {
        if !waitingLong.isEmpty {
            waitingLong.removeFirst().resume()
        } else if !waitingShort.isEmpty {
            waitingShort.removeFirst().resume()
        } else {
            running -= 1
        }
    }
}
