import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGINT, SIGTERM, SIGHUP and SIGQUIT as an async stream of their numbers, with the default handlers ignored so
/// the process can unregister first. SIGHUP (a closed terminal) and SIGQUIT (Ctrl-\\) end the run the same way:
/// left to their defaults they would exit (or dump core) with the application, the advertisement and the alias
/// still registered.
struct StopSignals {
    /// Each stop signal's number, as it arrives.
    let numbers: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    init() {
        let (numbers, stop) = AsyncStream<Int32>.makeStream()
        let queue = DispatchQueue(label: "blemu.signals")
        self.numbers = numbers
        sources = [SIGINT, SIGTERM, SIGHUP, SIGQUIT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { stop.yield(number) }
            source.resume()
            return source
        }
    }

    /// Stops listening.
    func cancel() { for source in sources { source.cancel() } }
}
