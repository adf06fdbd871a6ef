import Dispatch

// The loop thread as a Swift executor (the way SwiftNIO makes an EventLoop one): an actor whose `unownedExecutor`
// is the connection's runs its jobs on the loop thread, between dispatches, so state that bus handlers, signal
// handlers and file watches touch on that thread needs no lock, and `assumeIsolated` proves it.
extension ConnectionCore: SerialExecutor {
    /// Runs `job` on the loop thread, after what is queued before it; once the connection is closed, on one serial
    /// queue instead, so an actor pinned here keeps running (its shutdown, late calls) with nothing to dispatch.
    func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    /// Traps unless called on the loop thread or the closed connection's queue: `assumeIsolated` asks this when a
    /// bus handler, which no Swift job runs, touches an actor pinned here.
    func checkIsolated() {
        precondition(isIsolatingCurrentContext() == true, "not on the D-Bus loop thread of \(uniqueName)")
    }

    /// Whether the caller runs on this executor: the loop thread, or the closed connection's queue.
    func isIsolatingCurrentContext() -> Bool? {
        isOnLoopThread || DispatchQueue.getSpecific(key: Self.afterCloseKey) == ObjectIdentifier(self)
    }

    /// Runs one job here, on the loop thread or the queue that follows it.
    func run(_ job: UnownedJob) {
        job.runSynchronously(on: asUnownedSerialExecutor())
    }

    /// Hands a job to the queue that runs this executor's jobs once the loop has ended.
    func runAfterClose(_ job: UnownedJob) {
        afterClose.async { self.run(job) }
    }

    /// Marks `afterClose` as this connection's, for `isIsolatingCurrentContext`.
    static let afterCloseKey = DispatchSpecificKey<ObjectIdentifier>()
}

extension BusConnection {
    /// Whether the caller runs on this connection's executor (the loop thread, or once closed its queue): what an
    /// actor pinned here may check before it takes its isolation for granted, at the cost of a thread id compare.
    public var isCurrentExecutor: Bool { core.isIsolatingCurrentContext() == true }

    /// The loop thread as an executor: an actor returning this as its `unownedExecutor` runs where this
    /// connection's handlers run (and, once the connection is closed, on one serial queue). The actor must hold
    /// the connection, which keeps the executor alive.
    public var unownedExecutor: UnownedSerialExecutor { core.asUnownedSerialExecutor() }
}
