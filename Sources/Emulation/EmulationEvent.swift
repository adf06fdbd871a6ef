import GATTModel
import Peripheral

/// Something that happened while a profile ran, as the event log records it (one JSON line each).
public enum EmulationEvent: Hashable, Sendable {
    /// How a request was answered.
    public enum Answer: Hashable, Sendable {
        /// Answered with success.
        case success
        /// Answered with an ATT error: `error` is what the central received, `asked` what the profile asked for
        /// when the stack could not carry it (bluetoothd sends 0x0E for codes it has no spelling for).
        case error(ATTError, asked: ATTError? = nil)
    }

    /// The peripheral's state changed (`poweredOn`, `resetting`...).
    case stateChanged(String)
    /// A central connected.
    case connected(central: String)
    /// A central disconnected, with the stack's reason when it gives one (BlueZ 5.83 and later).
    case disconnected(central: String, reason: DisconnectReason? = nil)
    /// A read or write and its one answer; `value` is what was read or written, `latency` from request to answer.
    case request(
        operation: AttributeOperation, central: String, characteristicID: String, value: [UInt8], answer: Answer,
        latency: Duration)
    /// A central subscribed to a characteristic.
    case subscribed(central: String, characteristicID: String)
    /// A central unsubscribed.
    case unsubscribed(central: String, characteristicID: String)
    /// A value was notified (or indicated) to `centrals` subscribers.
    case notification(characteristicID: String, value: [UInt8], isIndication: Bool, centrals: Int)
    /// The notification queue refused an update: full.
    case queueFull(characteristicID: String)
    /// The notification queue drained: ready to update subscribers again.
    case queueReady
    /// The outbox, where updates wait for the queue, was full: `dropped` updates of the characteristic went nowhere.
    case outboxFull(characteristicID: String, dropped: Int)
    /// A deliberate fault fired.
    case fault(String, characteristicID: String?)
    /// The engine re-registered after bluetoothd restarted or the adapter came back.
    case restarted(reason: String)
    /// A pairing step the stack asked the peripheral's side (a passkey shown or typed, Just Works authorized).
    case pairing(PairingEvent)
    /// The control socket's `reset` put the device back as the profile starts it; `changed` are the characteristics
    /// whose value that changed, in profile order.
    case reset(changed: [String])
    /// The event log itself fell `EventLog.maximumPending` lines behind its reader and dropped this many.
    case linesDropped(Int)
    /// A protocol answered a write: how the request read, which case acted, and the state it changed; logged just
    /// before the write's `request` line.
    case protocolCase(Protocols.Trace)
    /// A request handed to a handler (`RequestHandlers`) and how it was decided: `answered`, `error 0x..`,
    /// `profile`, or the fallback's reason (`late`, `gone`, `unreachable`, `garbled`); `refused` for a line that
    /// decided nothing (no characteristic then, and no request when it named none). Logged just before the request's
    /// line.
    case handler(request: Int?, characteristicID: String?, outcome: String)
}

/// An event with the wall-clock time it happened: what one line of the event log holds.
public struct EventRecord: Hashable, Sendable {
    /// When it happened.
    public var time: WallTime
    /// What happened.
    public var event: EmulationEvent

    /// A record from its parts.
    public init(time: WallTime, event: EmulationEvent) {
        self.time = time
        self.event = event
    }
}
