import Foundation

extension Process {
    /// Starts the process with no signal blocked. The child inherits the spawning thread's signal mask, and
    /// libdispatch's worker threads (which run async code) block nearly every signal: qemu would then ignore the
    /// SIGTERM of timeout(1) and of `terminate()`, and a hung VM would only die by SIGKILL. (The lab's air once
    /// started its VMs so, and a cancelled run left them running.)
    func runWithSignalsUnblocked() throws {
        var none = sigset_t()
        var saved = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try run()
    }
}
