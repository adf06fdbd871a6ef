import GATTModel

/// A text a profile streams to each subscriber as Apple's BTLE Transfer sample does (profiles/transfer.yaml).
///
/// The profile format has no transfer key: a transfer is declared as a `notify` schedule with
/// `start: first-subscription` whose whole-value `sequence` does not repeat and ends with the value `EOM`. Run as a
/// plain schedule, its 20-byte pieces would suit only the default MTU and only the first subscriber; run as a
/// transfer, the pieces before `EOM` are joined back into the text and re-chunked by `TransferChunker` for each
/// subscribing central's `maximumUpdateValueLength`, then `EOM`, through the emulator's retry outbox.
struct TransferDefinition: Hashable, Sendable {
    /// The text's bytes, without `EOM`.
    var bytes: [UInt8]

    /// The transfers of a profile, by characteristic id.
    static func find(in profile: PeripheralProfile) -> [String: TransferDefinition] {
        var found: [String: TransferDefinition] = [:]
        for schedule in profile.behaviour.schedules
        where schedule.action == .notify && schedule.start == .firstSubscription {
            guard schedule.generators.count == 1, schedule.generators[0].field == nil,
                case .sequence(let values, repeats: false) = schedule.generators[0].generator,
                case let pieces = values.compactMap(bytes(of:)), pieces.count == values.count,
                pieces.last == TransferChunker.endOfMessage
            else { continue }
            found[schedule.characteristicID] = TransferDefinition(
                bytes: pieces.dropLast().flatMap { $0 })
        }
        return found
    }

    private static func bytes(of value: FieldValue) -> [UInt8]? {
        switch value {
        case .text(let text): Array(text.utf8)
        case .bytes(let bytes): bytes
        default: nil
        }
    }
}
