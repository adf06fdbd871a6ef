internal import CDBus
import Dispatch
import Glibc
import Logging
import Synchronization

/// The private half of a `BusConnection`: the libdbus connection, its loop thread, and all routing state.
///
/// Threading model (who owns what):
/// - One dedicated **loop thread** per connection owns the `DBusConnection`: it alone reads, writes, dispatches,
///   sends and finally closes and unrefs it. It polls libdbus's watches (the socket) and a pipe (the wakeup), so it
///   keeps dispatching incoming calls while any number of our own outgoing calls wait for replies (bluetoothd's
///   `GetManagedObjects` during `RegisterApplication` is answered while that call is pending).
/// - Other threads never touch the connection: they build `DBusMessage`s (a message is confined to one thread
///   until handed over) and pass them through `inbox` (a `Mutex`), then write one byte to the pipe. A send made on the
///   loop thread itself (an `.immediate` handler answering at once) goes straight to libdbus: the fast path.
/// - `pending`, `isDisconnected`, `watches` and `timeouts` are touched only by the loop thread:
///   libdbus calls the watch and timeout functions back from inside calls that only the loop thread makes.
/// - `files` (the descriptors `FileWatch`es own, polled beside libdbus's) is touched only by the loop thread too:
///   other threads add, arm and remove them through the inbox.
/// - `tree` and `subscriptions` are shared behind `Mutex`es; handlers and getters run outside those locks.
/// `dbus_threads_init_default()` is still called once, because libdbus messages (reference counts, allocation)
/// are used from several threads.
///
/// `@unchecked Sendable` invariant: the mutable stored properties without a lock (`pending`, `isDisconnected`,
/// `watches`, `timeouts`, `files`, `unwatchedEarly`, `callNames`) and `raw` are used only on the loop thread (or
/// before it starts, in `init`).
final class ConnectionCore: @unchecked Sendable {
    let logger: Logger
    /// Whether `logger` takes trace lines, asked once: swift-log's `logLevel` copies the handler, some 90
    /// instructions, and every call and answer would ask it (Benchmarks/README.md, "The last route kept").
    let tracesMessages: Bool
    let uniqueName: String
    let canPassFileDescriptors: Bool
    let tree = Mutex(ObjectTree())
    let subscriptions = Mutex(Subscriptions())
    let counters = Counters()

    private let raw: OpaquePointer
    private let wakeReadFD: Int32
    private let wakeWriteFD: Int32
    private let inbox = Mutex(Inbox())
    private let wakePending = Atomic<Bool>(false)
    private let loopThreadID = Atomic<UInt>(0)
    private let thread = Mutex<pthread_t?>(nil)
    /// Runs this executor's jobs once the loop has ended (ConnectionCore+Executor.swift).
    let afterClose: DispatchQueue
    let nextFileWatchID = Atomic<UInt64>(0)

    // Loop thread only.
    private var pending = PendingCalls()
    private var isDisconnected = false
    private var watches: [OpaquePointer] = []
    private var timeouts: [LibdbusTimeout] = []
    private var files: [UInt64: WatchedFile] = [:]
    /// Watches cancelled on the loop thread before their `.watch` left the inbox: never to be polled.
    private var unwatchedEarly: Set<UInt64> = []
    /// The last call's names, for the next call to reuse (`handleMethodCall`).
    var callNames = CallNames()

    struct LibdbusTimeout {
        let raw: OpaquePointer
        var due: UInt64
    }

    enum Command: Sendable {
        case send(Message)
        case call(Message, deadline: UInt64, CheckedContinuation<Message, any Error>)
        case file(FileCommand)
        case job(UnownedJob)
        case stop
    }

    struct Inbox {
        var commands: [Command] = []
        var isClosed = false
    }

    /// Opens a private connection (never libdbus's shared singleton, so closing it is ours to do) and says Hello.
    init(_ bus: BusAddress, logger: Logger) throws(DBusError) {
        ConnectionCore.initialiseThreads
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        var connection: OpaquePointer?
        switch bus {
        case .system: connection = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session: connection = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            connection = dbus_connection_open_private(address, &error)
            if let opened = connection, dbus_bus_register(opened, &error) == 0 {
                dbus_connection_close(opened)
                dbus_connection_unref(opened)
                connection = nil
            }
        }
        guard let connection else {
            let name = dbus_error_is_set(&error) != 0 ? String(cString: error.name) : StandardErrorName.failed
            let text = dbus_error_is_set(&error) != 0 ? String(cString: error.message) : "could not connect"
            throw DBusError(name: name, message: text)
        }
        // dbus_bus_get_private defaults to _exit() when the bus goes away; a library must not kill its process.
        dbus_connection_set_exit_on_disconnect(connection, 0)
        // A non-blocking pipe is the wakeup (Glibc's module does not export eventfd): any byte in it wakes poll.
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw DBusError(name: StandardErrorName.failed, message: "pipe failed: errno \(errno)")
        }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        raw = connection
        wakeReadFD = ends[0]
        wakeWriteFD = ends[1]
        uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        canPassFileDescriptors = dbus_connection_can_send_type(connection, TypeCode.unixFD.cValue) != 0
        self.logger = logger
        tracesMessages = logger.logLevel <= .trace
        afterClose = DispatchQueue(label: "blemu.dbus.after-close")
        afterClose.setSpecific(key: Self.afterCloseKey, value: ObjectIdentifier(self))
    }

    deinit {
        // Only after the loop thread ended (it holds a reference while it runs): nobody can write the pipe now.
        close(wakeReadFD)
        close(wakeWriteFD)
    }

    private static let initialiseThreads: Void = { _ = dbus_threads_init_default() }()

    /// Installs the message filter and starts the loop thread.
    func start() {
        dbus_connection_add_filter(raw, handleMessageFromLibdbus, Unmanaged.passUnretained(self).toOpaque(), nil)
        let retained = Unmanaged.passRetained(self).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(
            &handle, nil,
            { argument in
                let core = Unmanaged<ConnectionCore>.fromOpaque(argument!).takeRetainedValue()
                core.runLoop()
                return nil
            }, retained)
        if status != 0 {
            Unmanaged<ConnectionCore>.fromOpaque(retained).release()
            logger.error("could not start the D-Bus loop thread", metadata: ["errno": "\(status)"])
            dbus_connection_close(raw)
            dbus_connection_unref(raw)
            inbox.withLock { $0.isClosed = true }
            return
        }
        thread.withLock { $0 = handle }
    }

    /// Stops the loop (after it sends what was queued before) and waits for it, unless called on the loop itself.
    func stop() {
        submit(.stop)
        guard let handle = thread.withLock({ $0.take() }) else { return }
        // The loop thread cannot join itself (a handler closing its own connection): let it clean up alone.
        if isOnLoopThread { pthread_detach(handle) } else { pthread_join(handle, nil) }
    }

    var isOnLoopThread: Bool { loopThreadID.load(ordering: .relaxed) == UInt(pthread_self()) }

    var isClosed: Bool { inbox.withLock { $0.isClosed } }

    /// Queues a command for the loop thread; a closed connection fails a call with `Disconnected` at once.
    func submit(_ command: Command) {
        let rejected: Command? = inbox.withLock { state in
            guard !state.isClosed else { return command }
            state.commands.append(command)
            return nil
        }
        if let rejected {
            reject(rejected)
            return
        }
        // One wakeup byte per batch: the loop clears the flag before it drains the inbox.
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            var one: UInt8 = 1
            _ = Glibc.write(wakeWriteFD, &one, 1)
        }
    }

    /// Sends a finished message: directly on the loop thread, through the inbox from anywhere else.
    func send(_ message: Message) {
        if isOnLoopThread {
            sendNow(message)
        } else {
            submit(.send(message))
        }
    }

    /// Sends a call and suspends until its reply, error, timeout (`NoReply`) or disconnection (`Disconnected`).
    func call(_ message: Message, timeoutNanoseconds: UInt64) async throws -> Message {
        let deadline = monotonicNanoseconds() &+ timeoutNanoseconds
        counters.callsSent.add(1, ordering: .relaxed)
        return try await withCheckedThrowingContinuation { continuation in
            submit(.call(message, deadline: deadline, continuation))
        }
    }

    private func reject(_ command: Command) {
        switch command {
        case .send(let message):
            logger.debug("connection closed; message not sent", metadata: ["member": "\(message.member ?? "")"])
        case .call(_, _, let continuation):
            continuation.resume(throwing: DBusError(name: StandardErrorName.disconnected, message: "connection closed"))
        case .file(let command): rejectFileCommand(command)
        case .job(let job): runAfterClose(job)
        case .stop: break
        }
    }

    private func sendNow(_ message: Message) {
        guard !isDisconnected, dbus_connection_send(raw, message.raw, nil) != 0 else {
            logger.debug("message not sent: disconnected or out of memory")
            return
        }
    }

    // MARK: The loop

    private func runLoop() {
        loopThreadID.store(UInt(pthread_self()), ordering: .relaxed)
        // Installed here so that libdbus calls these back only on this thread (it calls them at once for the
        // existing watch, and later from inside send and dispatch, which only this thread does).
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(raw, addWatch, removeWatch, toggleWatch, me, nil)
        dbus_connection_set_timeout_functions(raw, addTimeout, removeTimeout, toggleTimeout, me, nil)
        var batch: [Command] = []
        var fds: [pollfd] = []
        var polled: [OpaquePointer] = []
        var polledFiles: [UInt64] = []
        var isStopping = false
        while !isStopping {
            wakePending.store(false, ordering: .sequentiallyConsistent)
            inbox.withLock { swap(&$0.commands, &batch) }
            for command in batch {
                switch command {
                case .send(let message): sendNow(message)
                case .call(let message, let deadline, let continuation): startCall(message, deadline, continuation)
                case .file(let command): perform(command)
                case .job(let job): run(job)
                case .stop: isStopping = true
                }
            }
            batch.removeAll(keepingCapacity: true)
            if isStopping { break }
            let now = monotonicNanoseconds()
            expireCalls(now: now)
            fireTimeouts(now: now)
            while dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
            if isDisconnected || dbus_connection_get_is_connected(raw) == 0 {
                isDisconnected = true
                break
            }
            // One poll over libdbus's enabled watches, the watched files and the wakeup pipe; libdbus enables the
            // writable watch itself while it has queued output.
            fds.removeAll(keepingCapacity: true)
            polled.removeAll(keepingCapacity: true)
            polledFiles.removeAll(keepingCapacity: true)
            fds.append(pollfd(fd: wakeReadFD, events: Int16(POLLIN), revents: 0))
            for watch in watches where dbus_watch_get_enabled(watch) != 0 {
                let flags = dbus_watch_get_flags(watch)
                var events: Int16 = 0
                if flags & WatchFlag.readable != 0 { events |= Int16(POLLIN) }
                if flags & WatchFlag.writable != 0 { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
                polled.append(watch)
            }
            for (id, file) in files {
                let events = Int16(POLLIN) | (file.wantsWritable ? Int16(POLLOUT) : 0)
                fds.append(pollfd(fd: file.fd, events: events, revents: 0))
                polledFiles.append(id)
            }
            let ready = poll(&fds, nfds_t(fds.count), pollTimeout())
            if ready < 0 && errno != EINTR {
                logger.error("poll failed; closing the D-Bus connection", metadata: ["errno": "\(errno)"])
                break
            }
            if fds[0].revents != 0 {
                var drain: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
                while Glibc.read(wakeReadFD, &drain, 32) == 32 {}
            }
            for (index, watch) in polled.enumerated() {
                let revents = fds[index + 1].revents
                guard revents != 0 else { continue }
                // Handling one watch can remove another (libdbus then frees it): only handle live ones.
                guard watches.contains(watch) else { continue }
                var flags: UInt32 = 0
                if revents & Int16(POLLIN) != 0 { flags |= WatchFlag.readable }
                if revents & Int16(POLLOUT) != 0 { flags |= WatchFlag.writable }
                if revents & Int16(POLLERR) != 0 { flags |= WatchFlag.error }
                if revents & Int16(POLLHUP) != 0 { flags |= WatchFlag.hangup }
                _ = dbus_watch_handle(watch, flags)
            }
            let firstFile = polled.count + 1
            for (index, id) in polledFiles.enumerated() {
                handleFile(id, revents: fds[firstFile + index].revents)
            }
        }
        tearDown()
        // A later thread may get this thread's id: from here no thread is the loop.
        loopThreadID.store(0, ordering: .relaxed)
    }

    // MARK: Watched files (loop thread only)

    func perform(_ command: FileCommand) {
        switch command {
        case .watch(let id, let fd, let handler):
            guard unwatchedEarly.remove(id) == nil else { return }
            files[id] = WatchedFile(fd: fd, handler: handler)
        case .armWritable(let id):
            files[id]?.wantsWritable = true
        case .unwatch(let id, let fd):
            if files.removeValue(forKey: id) == nil { unwatchedEarly.insert(id) }
            _ = Glibc.close(fd)
        }
    }

    /// Calls the file's handler for what poll saw: a handler may cancel any watch, so each is looked up again.
    private func handleFile(_ id: UInt64, revents: Int16) {
        guard revents != 0, let file = files[id] else { return }
        if revents & Int16(POLLOUT) != 0 && file.wantsWritable {
            files[id]?.wantsWritable = false
            file.handler(.writable)
        }
        // POLLHUP and POLLERR are news for the reader too: its recv sees the end or the error.
        let readable = Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)
        if revents & readable != 0 && files[id] != nil { file.handler(.readable) }
    }

    // MARK: libdbus watches and timeouts (loop thread only)

    func add(watch: OpaquePointer) { watches.append(watch) }
    func remove(watch: OpaquePointer) { watches.removeAll { $0 == watch } }

    func add(timeout: OpaquePointer) {
        timeouts.append(LibdbusTimeout(raw: timeout, due: dueTime(of: timeout)))
    }
    func remove(timeout: OpaquePointer) { timeouts.removeAll { $0.raw == timeout } }
    func toggle(timeout: OpaquePointer) {
        // A re-enabled timeout starts its interval again (libdbus's own main loops do the same).
        for index in timeouts.indices where timeouts[index].raw == timeout {
            timeouts[index].due = dueTime(of: timeout)
        }
    }

    private func dueTime(of timeout: OpaquePointer) -> UInt64 {
        monotonicNanoseconds() &+ UInt64(max(0, dbus_timeout_get_interval(timeout))) &* 1_000_000
    }

    private func fireTimeouts(now: UInt64) {
        guard !timeouts.isEmpty else { return }
        let due = timeouts.filter { $0.due <= now && dbus_timeout_get_enabled($0.raw) != 0 }.map(\.raw)
        for timeout in due where timeouts.contains(where: { $0.raw == timeout }) {
            toggle(timeout: timeout)
            _ = dbus_timeout_handle(timeout)
        }
    }

    private func tearDown() {
        let leftovers = inbox.withLock { state in
            state.isClosed = true
            let commands = state.commands
            state.commands = []
            // Queued under the lock, so that a job enqueued after the close runs after these, as it would have.
            for case .job(let job) in commands { runAfterClose(job) }
            return commands
        }
        for command in leftovers {
            switch command {
            case .send(let message): sendNow(message)
            case .job: break
            default: reject(command)
            }
        }
        if !isDisconnected { dbus_connection_flush(raw) }
        let disconnected = DBusError(name: StandardErrorName.disconnected, message: "connection closed")
        for call in pending.removeAll() { call.continuation.resume(throwing: disconnected) }
        let closers = subscriptions.withLock { state in
            let closers = state.entries.values.compactMap(\.onClose)
            state.entries = [:]
            return closers
        }
        for close in closers { close() }
        dbus_connection_close(raw)
        dbus_connection_unref(raw)
        logger.debug("D-Bus connection closed", metadata: ["unique-name": "\(uniqueName)"])
    }

    private func startCall(
        _ message: Message, _ deadline: UInt64, _ continuation: CheckedContinuation<Message, any Error>
    ) {
        var serial: UInt32 = 0
        guard !isDisconnected, dbus_connection_send(raw, message.raw, &serial) != 0 else {
            continuation.resume(throwing: DBusError(name: StandardErrorName.disconnected, message: "not sent"))
            return
        }
        trace(
            "→ call",
            metadata: [
                "serial": "\(serial)",
                "destination": "\(dbus_message_get_destination(message.raw).map { String(cString: $0) } ?? "")",
                "path": "\(message.path?.rawValue ?? "")", "interface": "\(message.interface ?? "")",
                "member": "\(message.member ?? "")", "signature": "\(message.signature)",
            ])
        // Registered before the loop can dispatch anything else, so the reply cannot overtake it.
        pending.add(PendingCalls.Call(message: message, continuation: continuation, deadline: deadline), serial: serial)
    }

    private func expireCalls(now: UInt64) {
        for (serial, call) in pending.expire(now: now) {
            logger.debug(
                "call timed out",
                metadata: [
                    "serial": "\(serial)", "path": "\(call.message.path?.rawValue ?? "")",
                    "interface": "\(call.message.interface ?? "")", "member": "\(call.message.member ?? "")",
                ])
            call.continuation.resume(
                throwing: DBusError(name: StandardErrorName.noReply, message: "no reply within the timeout"))
        }
    }

    private func pollTimeout() -> Int32 {
        var deadline = pending.nearestDeadline
        for timeout in timeouts where dbus_timeout_get_enabled(timeout.raw) != 0 {
            deadline = min(deadline, timeout.due)
        }
        guard deadline != .max else { return -1 }
        let now = monotonicNanoseconds()
        guard deadline > now else { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }

    /// `logger.trace`, only when `tracesMessages` says the line would be written.
    func trace(
        _ message: @autoclosure () -> Logger.Message, metadata: @autoclosure () -> Logger.Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard tracesMessages else { return }
        logger.trace(message(), metadata: metadata(), file: file, function: function, line: line)
    }

    // MARK: Messages from libdbus (loop thread, inside dbus_connection_dispatch)

    func handle(_ raw: OpaquePointer) {
        switch dbus_message_get_type(raw) {
        case MessageType.methodCall:
            handleMethodCall(Message(retaining: raw))
        case MessageType.methodReturn, MessageType.error:
            let serial = dbus_message_get_reply_serial(raw)
            guard let call = pending.answer(serial) else {
                trace("reply to an unknown or timed-out call", metadata: ["reply-serial": "\(serial)"])
                return
            }
            counters.repliesReceived.add(1, ordering: .relaxed)
            let reply = Message(retaining: raw)
            trace(
                dbus_message_get_type(raw) == MessageType.error ? "← error" : "← reply",
                metadata: [
                    "reply-serial": "\(serial)", "sender": "\(reply.sender ?? "")",
                    "error": "\(reply.errorName ?? "")", "signature": "\(reply.signature)",
                    "path": "\(call.message.path?.rawValue ?? "")", "interface": "\(call.message.interface ?? "")",
                    "member": "\(call.message.member ?? "")",
                ])
            call.continuation.resume(returning: reply)
        case MessageType.signal:
            let signal = Message(retaining: raw)
            if signal.interface == "org.freedesktop.DBus.Local" && signal.member == "Disconnected" {
                logger.debug("the bus closed the connection")
                isDisconnected = true
                return
            }
            deliverSignal(signal)
        default:
            break
        }
    }
}
