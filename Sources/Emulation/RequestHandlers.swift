import ControlProtocol
import GATTModel
import Peripheral
import Synchronization

/// Programs that answer a characteristic's requests for the profile: each one a control connection turned into a
/// request stream by `{"command":"handle"}` (`ControlServer`). `BehaviourHandler` asks `forward` after the profile's
/// own checks (faults, permissions, encryption, offsets) pass; the request goes out as one JSON line and the first of
/// these decides it:
/// - the handler's answer line (`receive`): a value, an accept, an ATT error, or "the profile's own behaviour";
/// - the handler's deadline (`Claim.deadline`, counted from the request's arrival and kept under the request
///   deadline, whatever a fault delay took before): the fallback;
/// - the connection closing, a line that cannot be sent now, or shutdown (`releaseAll`): the fallback;
/// - a garbled answer naming the request: the fallback, and the handler is told why.
///
/// So a handler that is late, gone or wrong still leaves one answer per request. An answer for a request already
/// decided (a second answer, or one past the deadline) is refused: counted, logged and told to the handler.
/// The one waiting point is `Slot`, resolved once whoever comes first; the others find it gone.
public final class RequestHandlers: Sendable {
    /// What decides a request when its handler does not: the profile's own behaviour, or an ATT error.
    public enum Fallback: Hashable, Sendable {
        /// Answered as if no handler were attached: the profile's rules, protocols and store.
        case profile
        /// Answered with this error.
        case error(ATTError)
    }

    /// A handler's claim: which characteristics and operations it answers, its deadline and fallback.
    public struct Claim: Sendable {
        /// The characteristic ids it answers.
        public var characteristicIDs: Set<String>
        /// Reads, writes or both.
        public var operations: Set<AttributeOperation>
        /// How long a request waits for its answer.
        public var deadline: Duration
        /// What answers when the handler does not.
        public var fallback: Fallback
    }

    /// How a forwarded request was decided.
    public enum Verdict: Hashable, Sendable {
        /// The handler answered success: a read with this value (nil: the stored one), a write accepted and stored.
        case accept([UInt8]?)
        /// The handler answered with an ATT error.
        case reject(ATTError)
        /// The profile's own behaviour answers: the handler asked for it, or its fallback says so.
        case profile
    }

    /// Why a request was not decided by its handler, as the event log spells it.
    public enum Miss: String, Hashable, Sendable {
        /// The deadline passed first.
        case late
        /// The connection closed, or blemu is shutting down.
        case gone
        /// The request line could not be sent without waiting: the handler stopped reading.
        case unreachable
        /// The answer named the request but could not be read.
        case garbled
    }

    /// What the counters report of handlers.
    public struct Counts: Hashable, Sendable {
        /// Requests sent to a handler.
        public var forwarded = 0
        /// Requests the handler's own answer decided.
        public var answered = 0
        /// Requests the fallback decided (late, gone, unreachable, garbled).
        public var fallbacks = 0
        /// Lines refused: not an answer, for a request already decided, or for one never sent to this handler.
        public var refused = 0

        /// None yet.
        public init() {}
    }

    private enum Slot {
        case waiting(CheckedContinuation<Resolution, Never>?)
        case resolved(Resolution)
    }

    private enum Resolution {
        case answered(Verdict)
        case missed(Miss)
    }

    private struct Pending {
        var connection: Int
        var slot: Slot
        /// The longest value an answer may give: the characteristic's `max-length`.
        var maximumLength: Int
    }

    private struct Attached {
        var claim: Claim
        var send: @Sendable (String) -> Bool
    }

    private struct State {
        var connections: [Int: Attached] = [:]
        var pending: [Int: Pending] = [:]
        var nextConnection = 0
        var nextRequest = 0
        var isReleased = false
        var counts = Counts()
    }

    private let state = Mutex(State())
    /// How many handlers are attached, read without the lock: with none (nearly always), a request pays one atomic
    /// load for handlers, not a lock and a clock reading (Benchmarks/README.md, "Instructions per request").
    private let attachedCount = Atomic<Int>(0)
    private let clock: ElapsedClock
    private let log: EventLog?
    /// The manager's request deadline: a handler's own is kept under it, with room for the fallback to answer.
    let requestDeadline: Duration

    init(clock: ElapsedClock, requestDeadline: Duration, log: EventLog?) {
        self.clock = clock
        self.requestDeadline = requestDeadline
        self.log = log
    }

    /// The longest a handler may take: eight tenths of the request deadline, so the fallback (the profile's rules and
    /// store, a second or two at most with a state store's disk write) still answers before the engine gives up.
    public var longestDeadline: Duration { requestDeadline * 0.8 }

    /// The counters' numbers.
    public var counts: Counts { state.withLock { $0.counts } }

    /// Whether any handler is attached at all: the first question on every request's path.
    var isEmpty: Bool { attachedCount.load(ordering: .relaxed) == 0 }

    /// Whether any handler answers `operation` on `characteristicID`.
    func handles(_ operation: AttributeOperation, on characteristicID: String) -> Bool {
        guard !isEmpty else { return false }
        return state.withLock { state in
            state.connections.values.contains {
                $0.claim.operations.contains(operation) && $0.claim.characteristicIDs.contains(characteristicID)
            }
        }
    }

    /// Attaches a handler: `send` writes one line to it without blocking and says whether all of it went. Returns
    /// the connection's number, or why the claim is refused (a characteristic another handler answers already).
    func attach(_ claim: Claim, send: @escaping @Sendable (String) -> Bool) -> Result<Int, ControlError> {
        state.withLock { state in
            for (_, attached) in state.connections {
                let shared = attached.claim.characteristicIDs.intersection(claim.characteristicIDs)
                    .filter { _ in !attached.claim.operations.isDisjoint(with: claim.operations) }
                if let id = shared.sorted().first {
                    return .failure(.failed("another handler answers `\(id)` already; one handler per characteristic"))
                }
            }
            state.nextConnection += 1
            state.connections[state.nextConnection] = Attached(claim: claim, send: send)
            attachedCount.store(state.connections.count, ordering: .relaxed)
            return .success(state.nextConnection)
        }
    }

    /// Detaches a handler whose connection closed: its waiting requests get the fallback now.
    func detach(_ connection: Int) {
        let waiting = state.withLock { state in
            state.connections[connection] = nil
            attachedCount.store(state.connections.count, ordering: .relaxed)
            return state.pending.filter { $0.value.connection == connection }.map(\.key)
        }
        for request in waiting { resolve(request, .missed(.gone)) }
    }

    /// At shutdown: every waiting request gets its fallback now, and later ones go straight to it, so blemu answers
    /// them all before it unregisters.
    func releaseAll() {
        let waiting = state.withLock { state in
            state.isReleased = true
            return Array(state.pending.keys)
        }
        for request in waiting { resolve(request, .missed(.gone)) }
    }

    /// Sends the request to its handler and waits for what decides it; nil when no handler answers `operation` on
    /// the characteristic. `value` is what was written (the whole value after any offsets) or nothing for a read;
    /// `arrived` is when the request came in (the handler's clock), so a fault's delay before this call is counted;
    /// nil when no handler was attached then (one attached during a fault's hold gets its whole deadline).
    func forward(
        _ operation: AttributeOperation, on characteristic: Characteristic, central: Central, value: [UInt8],
        offset: Int, withoutResponse: Bool = false, arrived: Duration?
    ) async -> Verdict? {
        let characteristicID = characteristic.id
        let now = clock.now()
        let found = state.withLock { state -> (Int, Attached)? in
            guard
                let (connection, attached) = state.connections.first(where: {
                    $0.value.claim.operations.contains(operation)
                        && $0.value.claim.characteristicIDs.contains(characteristicID)
                })
            else { return nil }
            state.nextRequest += 1
            state.counts.forwarded += 1
            // Past shutdown a request is decided at once: counted as every fallback is.
            if state.isReleased { state.counts.fallbacks += 1 }
            state.pending[state.nextRequest] = Pending(
                connection: connection, slot: state.isReleased ? .resolved(.missed(.gone)) : .waiting(nil),
                maximumLength: characteristic.maximumLength)
            return (state.nextRequest, attached)
        }
        guard let (number, attached) = found else { return nil }
        // The claim's deadline, but never past the longest from the request's arrival: the fallback must still
        // answer before the engine's deadline does.
        let deadline = min(now + attached.claim.deadline, (arrived ?? now) + longestDeadline)
        var line: [(String, JSONValue)] = [
            ("request", .integer(Int64(number))), ("operation", .string(operation.rawValue)),
            ("id", .string(characteristicID)), ("central", .string(central.id)),
            ("mtu", .integer(Int64(central.maximumUpdateValueLength + 3))),
        ]
        if operation == .write { line.append(("hex", .string(Hex.string(value, separator: "")))) }
        if operation == .read { line.append(("offset", .integer(Int64(offset)))) }
        // The handler's answer still decides what is stored; the central hears nothing of it.
        if withoutResponse { line.append(("withoutResponse", .bool(true))) }
        if isWaiting(number) && !attached.send(JSONValue.orderedObjectText(line) + "\n") {
            resolve(number, .missed(.unreachable))
        }
        let clock = clock
        let timer = Task { [weak self] in
            do { try await clock.sleepUntil(deadline) } catch { return }
            self?.resolve(number, .missed(.late))
        }
        let resolution = await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Resolution? in
                guard case .resolved(let resolution)? = state.pending[number]?.slot else {
                    state.pending[number]?.slot = .waiting(continuation)
                    return nil
                }
                state.pending[number] = nil
                return resolution
            }
            if let ready { continuation.resume(returning: ready) }
        }
        timer.cancel()
        let verdict: Verdict
        let outcome: String
        switch resolution {
        case .answered(let answered):
            verdict = answered
            outcome =
                switch answered {
                case .accept: "answered"
                case .reject(let error): "error \(error)"
                case .profile: "profile"
                }
        case .missed(let miss):
            verdict =
                switch attached.claim.fallback {
                case .profile: .profile
                case .error(let error): .reject(error)
                }
            outcome = miss.rawValue
        }
        log?.record(.handler(request: number, characteristicID: characteristicID, outcome: outcome))
        return verdict
    }

    /// Reads one line a handler sent: an answer (`{"answer":N, ...}`) decides request N; returns the line to send
    /// back when something was wrong with it, nil when it was taken.
    func receive(_ line: [String: JSONValue]?, from connection: Int) -> String? {
        guard let line, let number = line["answer"]?.integer else {
            return refuse(nil, "not an answer: send {\"answer\":N} with the request's number N")
        }
        let notWaiting =
            "request \(number) is not waiting for this handler's answer: answered already, past its deadline, or never sent here"
        let maximumLength = state.withLock { $0.pending[number]?.maximumLength } ?? Characteristic.maximumValueLength
        switch Self.verdict(in: line, maximumLength: maximumLength) {
        case .success(let verdict):
            guard resolve(number, .answered(verdict), from: connection) else { return refuse(number, notWaiting) }
            return nil
        case .failure(let error):
            guard resolve(number, .missed(.garbled), from: connection) else { return refuse(number, notWaiting) }
            return Self.complaint("request \(number) got the fallback: \(error.description)")
        }
    }

    /// Counts and logs a line that decided nothing, and returns what to tell its handler.
    func refuse(_ number: Int?, _ message: String) -> String {
        state.withLock { $0.counts.refused += 1 }
        log?.record(.handler(request: number, characteristicID: nil, outcome: "refused"))
        return Self.complaint(message)
    }

    /// Whether request `number` still waits for what decides it.
    private func isWaiting(_ number: Int) -> Bool {
        state.withLock { state in
            if case .waiting? = state.pending[number]?.slot { true } else { false }
        }
    }

    /// The first resolution of a request wins; the rest find it decided. `connection`, when given, must be the one
    /// the request was sent to. Returns whether this one decided it.
    @discardableResult
    private func resolve(_ number: Int, _ resolution: Resolution, from connection: Int? = nil) -> Bool {
        let (decided, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Resolution, Never>?) in
            guard let pending = state.pending[number], connection == nil || pending.connection == connection,
                case .waiting(let waiter) = pending.slot
            else { return (false, nil) }
            if case .answered = resolution { state.counts.answered += 1 } else { state.counts.fallbacks += 1 }
            if let waiter {
                state.pending[number] = nil
                return (true, waiter)
            }
            state.pending[number]?.slot = .resolved(resolution)
            return (true, nil)
        }
        waiter?.resume(returning: resolution)
        return decided
    }

    /// The verdict an answer line asks for: `profile`, `error`, `hex` (a read's value, or what a write keeps: at most
    /// `maximumLength` bytes), or none of them (success).
    static func verdict(in line: [String: JSONValue], maximumLength: Int) -> Result<Verdict, ControlError> {
        if line["profile"]?.bool == true { return .success(.profile) }
        if let raw = line["error"] {
            guard let error = ATTError(json: raw) else {
                return .failure(.badValue("`error` must be an ATT error's name, 0xNN, or a code from 0 to 255"))
            }
            return .success(.reject(error))
        }
        if let raw = line["hex"] {
            guard let hex = raw.string, let bytes = Hex.bytes(hex) else {
                return .failure(.badValue("`hex` is not hex: \(raw.text)"))
            }
            guard bytes.count <= maximumLength else {
                return .failure(.badValue("`hex` is \(bytes.count) bytes, past the characteristic's \(maximumLength)"))
            }
            return .success(.accept(bytes))
        }
        return .success(.accept(nil))
    }

    private static func complaint(_ message: String) -> String {
        JSONValue.orderedObjectText([("ok", .bool(false)), ("error", .string(message))])
    }

}

extension ATTError {
    /// An error as the control protocol spells it: a name (`unlikely-error`), `0x80`, or a code.
    init?(json: JSONValue) {
        if let name = json.string {
            self.init(name: name)
        } else if let code = json.integer, (0...255).contains(code) {
            self.init(rawValue: UInt8(code))
        } else {
            return nil
        }
    }
}
