import ArgumentParser
import ControlProtocol
import Dispatch
import LiveView
import Logging
import Serving
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `blemu ui --control SOCK`: a live page of a running device, served next to it (docs/live-view.md).
struct UICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ui",
        abstract: "Watch and steer a running device from a browser: a live page on its control socket.",
        discussion: """
            Serves a page that shows the device (name, advertisement, adapter, BlueZ version, state), its GATT tree \
            with decoded values, the centrals and their subscriptions, the event log as a timeline with plots, and \
            the counters, all pushed as they change; its controls send the control protocol's own commands. It needs \
            only the control socket of a `blemu run ... --control SOCK`: the device may start after the view, and \
            the page says when it cannot be reached.

            Loopback by default, with no token. Any other address needs a token (`--ui-token`, or a random one \
            printed in the URL); requests whose Host or Origin is not the view's own are refused either way.

            Exit codes: 0 on Ctrl-C or SIGTERM, 64 for a bad option, 71 when the address cannot be listened on or \
            connections can no longer be accepted there.

            Example:
              blemu run profiles/heart-rate.yaml --control /tmp/hr.sock &
              blemu ui --control /tmp/hr.sock
            """)

    @Option(help: ArgumentHelp("The control socket of the device (blemu run --control).", valueName: "path"))
    var control: String

    @Option(
        help: ArgumentHelp(
            "The device's event log (blemu run --events): a page opened late starts from its last 2000 events "
                + "instead of the socket's latest 256.",
            valueName: "file"))
    var events: String?

    @Option(
        help: ArgumentHelp("Where to listen: HOST:PORT, [IPV6]:PORT or PORT (0: a free port).", valueName: "address"))
    var listen = "127.0.0.1:8080"

    @Option(
        name: .customLong("ui-token"),
        help: ArgumentHelp(
            "The token the page and every request must carry; required beyond loopback (a random one if not given).",
            valueName: "token"))
    var token: String?

    @Option(
        name: .customLong("allow-host"),
        help: ArgumentHelp(
            "Another HOST:PORT the page is opened under (a forwarded port), accepted as Host and Origin.",
            valueName: "host:port"))
    var allowedHosts: [String] = []

    func run() async throws {
        // A reader that goes away (`blemu ui | head -1`) makes a write fail with EPIPE, which costs that line; by
        // default the signal would end the view.
        signal(SIGPIPE, SIG_IGN)
        let address: ViewAddress
        do { address = try ViewAddress(parsing: listen) } catch {
            Console.error("blemu ui: --listen \(error)")
            throw ExitCode(ExitStatus.usage.code)
        }
        if let token,
            token.isEmpty || token.contains(where: { !$0.isASCII || !($0.isLetter || $0.isNumber || $0 == "-") })
        {
            Console.error(
                "blemu ui: --ui-token: use ASCII letters, digits and '-' only (it goes into a URL and a cookie)")
            throw ExitCode(ExitStatus.usage.code)
        }
        Self.raiseDescriptorLimit()
        var logger = Logger(label: "blemu.ui")
        logger.logLevel = .warning
        let server = LiveViewServer(
            control: control, address: address, token: token, extraHosts: allowedHosts, eventLog: events,
            logger: logger)
        // Ctrl-C, SIGTERM (`blemu run --ui` stopping its view) and a closed terminal end the view cleanly, 0. The
        // handlers come first: a stop that follows the view's first line at once must not meet a signal's default
        // action, which ends the process by the signal.
        let stop = Stop()
        let stops = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.request() }
            source.resume()
            return source
        }
        defer { for source in stops { source.cancel() } }
        // Bounded: a device that claimed its socket but is still starting holds early clients in the backlog, and
        // the view must listen (and print its URL) all the same.
        let answered = try? ControlClient(path: control).stream(
            ["command": .string("status")], until: .now + .seconds(2)
        ) { _ in false }
        if answered != .stopped {
            Console.error("blemu ui: \(control) does not answer yet; the page says so until the device is there")
        }
        let serving = Task {
            try await server.run { port in
                Console.line(
                    "blemu ui: \(server.url(port: port)) (device: \(control)); Ctrl-C to stop", to: STDOUT_FILENO)
            }
        }
        stop.serve(serving)
        // Beside `blemu run --ui`: its device gone (even by SIGKILL, which leaves it no chance to stop the view), the
        // view has nothing to show and ends with it; the orphan's parent becomes another process.
        let orphaned = getenv(Handover.liveParentVariable).flatMap({ pid_t(String(cString: $0)) }).map {
            parent in
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now(), repeating: .milliseconds(500))
            timer.setEventHandler { if getppid() != parent { serving.cancel() } }
            timer.resume()
            return timer
        }
        defer { orphaned?.cancel() }
        do { try await serving.value } catch is CancellationError {} catch let error as LiveViewServer.ListenError {
            Console.error("blemu ui: \(error)")
            throw ExitCode(71)
        }
    }

    /// A stop asked for by a signal, before or after the server's task exists: the task is cancelled either way.
    private final class Stop: Sendable {
        private let state = Mutex<(task: Task<Void, any Error>?, requested: Bool)>((nil, false))

        /// Cancels the task, now or once it is served.
        func request() {
            state.withLock { state in
                state.requested = true
                state.task?.cancel()
            }
        }

        /// The task a stop cancels; cancelled at once when a stop came first.
        func serve(_ task: Task<Void, any Error>) {
            state.withLock { state in
                state.task = task
                if state.requested { task.cancel() }
            }
        }
    }

    /// Raises the soft limit on open descriptors to the hard one: every page holds a connection (a silent one for
    /// up to 30 s before its request, an open page for as long as it stays), and the default soft limit of 1024 is
    /// soon reached by many tabs or an idle-connection flood, which would end the accept loop.
    private static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
