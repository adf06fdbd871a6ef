import GATTModel
import GATTProfile

/// A text a profile streams to each subscriber as Apple's BTLE Transfer sample does (profiles/transfer.yaml).
///
/// Declared as a schedule with `action: transfer` (docs/profile-format.md): a whole-value `sequence` that does not
/// repeat and ends with the value `EOM` (the decoder checks the shape). The pieces before `EOM` are joined back into
/// the text and re-chunked by `TransferChunker` for each subscribing central's `maximumUpdateValueLength`, then
/// `EOM`, through the emulator's retry outbox, as fast as the queue takes them. A `notify` schedule of the same
/// shape is an ordinary schedule: one piece per interval, to every subscriber.
struct TransferDefinition: Hashable, Sendable {
    /// The text's bytes, without `EOM`.
    var bytes: [UInt8]

    /// The transfers of a profile, by characteristic id.
    static func find(in profile: PeripheralProfile) -> [String: TransferDefinition] {
        var found: [String: TransferDefinition] = [:]
        for schedule in profile.behaviour.schedules where schedule.action == .transfer {
            guard let text = Schedule.transferText(of: schedule.generators) else { continue }
            found[schedule.characteristicID] = TransferDefinition(bytes: text)
        }
        return found
    }
}
