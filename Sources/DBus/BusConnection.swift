import Logging

/// Which bus to connect to.
public enum BusAddress: Sendable, Hashable {
    /// The system bus (where bluetoothd lives).
    case system
    /// The user's session bus.
    case session
    /// A bus daemon at a D-Bus address such as `unix:path=/tmp/bus`.
    case address(String)

    /// The bus a name selects: `system`, `session`, or else a D-Bus address such as `unix:path=/tmp/bus`.
    public init(name: String) {
        switch name {
        case "system": self = .system
        case "session": self = .session
        default: self = .address(name)
        }
    }

    /// The name `init(name:)` reads back: `system`, `session`, or the address.
    public var name: String {
        switch self {
        case .system: "system"
        case .session: "session"
        case .address(let address): address
        }
    }
}

/// A private connection to a message bus, served by its own loop thread (see `ConnectionCore` for the threading
/// model). Owns the libdbus connection and frees it on `close()` or deinit. Exported handlers that capture the
/// connection keep it alive: call `close()` when done.
///
/// ```swift
/// let bus = try BusConnection(.system, logger: logger)
/// try bus.addObjectManager(at: "/app")
/// try bus.export("/app/service0", [Interface("org.example.Thing1",
///     methods: [Method("ReadValue", inputs: "a{sv}", outputs: "ay", task: { call in
///         guard call.sender == bluetoothdOwner else { return call.fail("org.bluez.Error.NotAuthorized", "") }
///         call.reply([.bytes(await value())])          // consumes the call: a second answer does not compile
///     })],
///     properties: [Property("UUID", signature: "s", get: { .string("180d") })])])
/// let reply = try await bus.call("org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.GattManager1",
///     member: "RegisterApplication", arguments: [.objectPath("/app"), .vardict([:])])  // GetManagedObjects is served meanwhile
/// ```
public final class BusConnection: Sendable {
    let core: ConnectionCore

    /// Connects, says Hello, and starts dispatching; throws the libdbus error (e.g.
    /// `org.freedesktop.DBus.Error.FileNotFound`) if the bus cannot be reached or refuses us. `logger`'s level is
    /// read once, here: a handler whose level changes later keeps the trace lines it had.
    public init(_ bus: BusAddress, logger: Logger) throws(DBusError) {
        core = try ConnectionCore(bus, logger: logger)
        core.start()
        logger.debug("connected to D-Bus", metadata: ["unique-name": "\(core.uniqueName)"])
    }

    deinit { core.stop() }

    /// Our unique name on the bus, e.g. `:1.42`.
    public var uniqueName: String { core.uniqueName }

    /// Whether the connection can carry unix fds (`h`); without it, calls carrying fds fail.
    public var canPassFileDescriptors: Bool { core.canPassFileDescriptors }

    /// Whether `close()` was called or the bus went away; every later call fails with `Disconnected`.
    public var isClosed: Bool { core.isClosed }

    /// A snapshot of the call counters; see `CallStatistics`.
    public var statistics: CallStatistics {
        let c = core.counters
        return CallStatistics(
            callsReceived: c.callsReceived.load(ordering: .relaxed),
            callsAnswered: c.callsAnswered.load(ordering: .relaxed),
            repliesSent: c.repliesSent.load(ordering: .relaxed), droppedCalls: c.droppedCalls.load(ordering: .relaxed),
            callsSent: c.callsSent.load(ordering: .relaxed),
            repliesReceived: c.repliesReceived.load(ordering: .relaxed),
            signalsReceived: c.signalsReceived.load(ordering: .relaxed))
    }

    /// Sends what is queued, closes the connection and waits for the loop thread; pending calls fail with
    /// `Disconnected` and signal streams finish. Safe to call twice and from a handler.
    public func close() { core.stop() }

    // MARK: Outgoing calls

    /// Calls a method and awaits its reply's arguments. Throws `DBusError` for an error reply, `NoReply` after
    /// `timeout`, `Disconnected` if the connection closes first, and `MarshalError` for invalid arguments or names.
    public func call(
        _ destination: String, path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws -> [DBusValue] {
        let message = try Message.methodCall(destination: destination, path: path, interface: interface, member: member)
        try core.checkFileDescriptors(arguments)
        try message.append(arguments)
        let reply = try await core.call(message, timeoutNanoseconds: timeout.nanoseconds)
        if reply.type == MessageType.error {
            let arguments = reply.arguments()
            var text = ""
            if case .string(let first)? = arguments.first { text = first }
            throw DBusError(name: reply.errorName ?? StandardErrorName.failed, message: text)
        }
        return reply.arguments()
    }

    /// Sends a method call flagged no-reply (the receiver must not answer); throws `MarshalError` for invalid input.
    public func callWithoutReply(
        _ destination: String, path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = []
    ) throws(MarshalError) {
        let message = try Message.methodCall(destination: destination, path: path, interface: interface, member: member)
        try message.append(arguments)
        message.setNoReply()
        core.trace(
            "→ call (no reply)", metadata: ["destination": "\(destination)", "path": "\(path)", "member": "\(member)"])
        core.counters.callsSent.add(1, ordering: .relaxed)
        core.send(message)
    }

    /// Asks the bus for a well-known name; throws `DBusError` if the bus refuses or another connection owns it
    /// (we never queue for a name: a second instance should fail loudly, not wait silently).
    public func requestName(_ name: String, allowReplacement: Bool = false, replaceExisting: Bool = false) async throws
    {
        // Flags and reply codes from the specification's RequestName: ALLOW_REPLACEMENT 1, REPLACE_EXISTING 2,
        // DO_NOT_QUEUE 4; reply 1 PRIMARY_OWNER, 4 ALREADY_OWNER.
        let flags: UInt32 = (allowReplacement ? 1 : 0) | (replaceExisting ? 2 : 0) | 4
        let reply = try await callBus("RequestName", [.string(name), .uint32(flags)])
        let code = try reply.first?.asUInt32()
        guard code == 1 || code == 4 else {
            throw DBusError(
                name: StandardErrorName.failed,
                message: "\(name) is owned by another connection (RequestName: \(code ?? 0))")
        }
    }

    /// Releases a well-known name; throws `DBusError` if the bus refuses.
    public func releaseName(_ name: String) async throws {
        _ = try await callBus("ReleaseName", [.string(name)])
    }

    /// The unique name owning `name`, or nil if nobody owns it; throws `DBusError` on other failures.
    public func nameOwner(_ name: String) async throws -> String? {
        do {
            return try await callBus("GetNameOwner", [.string(name)]).first?.asString()
        } catch let error as DBusError where error.name == StandardErrorName.nameHasNoOwner {
            return nil
        }
    }

    /// The process ID of the connection `name` (a unique or well-known name), as the bus daemon saw it connect
    /// (`GetConnectionUnixProcessID`, D-Bus Specification, "Message Bus Messages"); throws `DBusError` when the
    /// bus cannot tell (no such name, or a peer on another machine).
    public func processID(of name: String) async throws -> UInt32 {
        try await callBus("GetConnectionUnixProcessID", [.string(name)]).first?.asUInt32() ?? 0
    }

    func callBus(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await call(
            "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: member,
            arguments: arguments)
    }
}

/// Counters of one connection, for proving in tests that every call got exactly one answer.
public struct CallStatistics: Sendable, Hashable {
    /// Method calls received (excluding `org.freedesktop.DBus.Peer`, which libdbus answers itself).
    public var callsReceived: Int
    /// Calls answered: replies, errors, dropped calls answered by deinit, and no-reply calls consumed.
    public var callsAnswered: Int
    /// Reply and error messages actually sent (no-reply calls send none).
    public var repliesSent: Int
    /// Calls dropped unanswered by a handler and answered `Failed` by `MethodCall`'s deinit.
    public var droppedCalls: Int
    /// Method calls we sent (with or without reply).
    public var callsSent: Int
    /// Replies and errors received for our calls (late replies after a timeout are not counted).
    public var repliesReceived: Int
    /// Signals received (before matching against subscriptions).
    public var signalsReceived: Int
}

extension Duration {
    /// Whole nanoseconds, saturating; negative durations count as zero.
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ UInt64(attoseconds / 1_000_000_000)
    }
}
