import Foundation

/// Admits a bounded number of VM boots at a time. Every scenario boots its own VM (a fresh bluetoothd per story,
/// so one story's failure cannot taint another), and Swift Testing starts every suite at once: on a 2-core runner
/// more than two TCG guests at a time only make each one slower, until their bounded waits time out. A scenario
/// suite's time limit (`labSuiteTimeLimit`, 60 minutes) includes the time its cases wait here for other suites' boots:
/// with every scenario on three systems the queue alone passed 25 minutes.
actor LabBootGate {
    /// The gate every scenario shares; `BLEMU_LAB_PARALLEL` sets its width (default 2).
    static let shared = LabBootGate(
        width: ProcessInfo.processInfo.environment["BLEMU_LAB_PARALLEL"].flatMap { Int($0) }.map { max(1, $0) } ?? 2)

    private let width: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// A gate admitting `width` boots at a time.
    init(width: Int) { self.width = width }

    /// Runs `body` once fewer than `width` others are running, in arrival order.
    func admitted<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        if running < width {
            running += 1
        } else {
            // The slot is handed over by `leave`, so `running` already counts this boot when it resumes.
            await withCheckedContinuation { waiting.append($0) }
        }
        defer { leave() }
        return try await body()
    }

    private func leave() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
