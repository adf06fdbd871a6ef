import GATTModel
import GATTProfile

/// Something the engines ask the peripheral to do; the engines own no I/O, so an actor performs these in order.
///
/// The same type comes out of every engine, so one `perform(_:)` in the manager's adapter serves them all.
public enum EmulationAction: Hashable, Sendable {
    /// Store a characteristic's new value; centrals see it when they read.
    case update(characteristicID: String, value: [UInt8])
    /// Store the value and notify it to the characteristic's subscribers.
    case notify(characteristicID: String, value: [UInt8])
    /// Store the value and indicate it to the characteristic's subscribers.
    case indicate(characteristicID: String, value: [UInt8])
    /// Stop advertising (a fault).
    case stopAdvertising
    /// Disconnect every central (a fault).
    case disconnect
    /// Something was adjusted to keep running (a generated value clamped to its field); log it, change nothing.
    case warning(characteristicID: String, message: String)
    /// Hold a characteristic's schedules (a protocol's `pause-schedules`: a workout paused).
    case pauseSchedules(characteristicID: String)
    /// Let a characteristic's schedules run again from now (a protocol's `resume-schedules`).
    case resumeSchedules(characteristicID: String)
    /// Wait this long before the next action (a protocol's `wait`).
    case wait(Duration)
    /// Set one field of a characteristic's value, telling no subscriber, and let the schedule generating that field
    /// go on from it (a protocol's `set-field`); the value is already fitted to the field.
    case setField(characteristicID: String, field: String, value: FieldValue)

    /// The characteristic a value action stores; nil for link actions.
    public var characteristicID: String? {
        switch self {
        case .update(let id, _), .notify(let id, _), .indicate(let id, _), .warning(let id, _): id
        case .pauseSchedules(let id), .resumeSchedules(let id), .setField(let id, _, _): id
        case .stopAdvertising, .disconnect, .wait: nil
        }
    }

    /// The value the action stores, if it stores one.
    public var value: [UInt8]? {
        switch self {
        case .update(_, let value), .notify(_, let value), .indicate(_, let value): value
        case .stopAdvertising, .disconnect, .warning, .pauseSchedules, .resumeSchedules, .wait, .setField: nil
        }
    }

    /// A value action of `kind` for a characteristic.
    static func storing(_ value: [UInt8], in characteristicID: String, by kind: Schedule.Action) -> EmulationAction {
        switch kind {
        case .update: .update(characteristicID: characteristicID, value: value)
        // A transfer is streamed by the emulator, never ticked (Schedules skips it); were it ticked, a piece
        // would be notified.
        case .notify, .transfer: .notify(characteristicID: characteristicID, value: value)
        case .indicate: .indicate(characteristicID: characteristicID, value: value)
        }
    }
}
