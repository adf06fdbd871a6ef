import BlueZModel
import GATTModel

/// One change to what bluetoothd has registered of ours: the user's (a service published or removed, advertising
/// started or stopped, shutdown) and the lifecycle machine's (`BlueZLifecycle.Action`: register what is missing,
/// refresh the advertisement). Each awaits bluetoothd several times, and two of them interleaved at those awaits
/// would unregister what the other just registered, so they are queued and one task, the backend's worker,
/// performs them one at a time in the order they were asked for (`BlueZBackend.enqueue(_:)`). What a job calls
/// (`applyTree`, `registerAgain`, `registerAdvertisementAfterPowerOn`, ...) is for the worker alone.
enum RegistrationJob: Sendable {
    /// Export the tree with this service added and register the application again.
    case publish(Service)
    /// Export the tree without the service of this id and register what remains.
    case unpublish(id: String)
    /// Withdraw the advertisement, then register this one (planned again for the adapter when extended).
    case startAdvertising(AdvertisingPlan, Advertisement)
    /// Withdraw the advertisement.
    case stopAdvertising
    /// Register what the lifecycle says is missing, then report the adapter's state.
    case registerAgain(reason: String)
    /// Unregister and register the advertisement, so that bluetoothd puts it on the controller again.
    case refreshAdvertisement
    /// Unregister everything and end the backend; every job queued after it finds the backend shut down.
    case shutDown

    /// A job in the queue, with whoever waits for its outcome (nil for the lifecycle's own).
    struct Queued: Sendable {
        /// What to do.
        var job: RegistrationJob
        /// Resumed once, with the job's outcome, when it has been performed (or could not be queued).
        var reply: CheckedContinuation<Result<Void, BlueZError>, Never>?
    }
}
