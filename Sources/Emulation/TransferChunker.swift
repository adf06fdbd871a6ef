import GATTModel
import GATTProfile

/// Splits a text into notifications the way Apple's BTLE Transfer sample sends it: chunks of at most the central's
/// maximum update length, then a separate `EOM` (end of message) notification.
///
/// A state machine for a bounded queue: `next()` shows the chunk to send and keeps showing it until `markSent()`,
/// so a caller whose `updateValue` says "queue full" simply asks again when the queue is ready, and no chunk is
/// lost or sent twice. Chunks split bytes, not characters, as the sample does; the central joins them back.
public struct TransferChunker: Hashable, Sendable {
    /// The marker that ends a transfer.
    public static let endOfMessage: [UInt8] = Schedule.endOfMessage

    private let bytes: [UInt8]
    private let maximumUpdateLength: Int
    private var offset = 0
    private var isEndSent = false

    /// A chunker for `text`; nil when `maximumUpdateLength` is below 3, too small for `EOM` (a real link's is at
    /// least 20: the default ATT MTU of 23 less the 3-byte notification header).
    public init?(text: String, maximumUpdateLength: Int) {
        self.init(bytes: Array(text.utf8), maximumUpdateLength: maximumUpdateLength)
    }

    /// A chunker for raw bytes; nil when `maximumUpdateLength` is below 3.
    public init?(bytes: [UInt8], maximumUpdateLength: Int) {
        guard maximumUpdateLength >= Self.endOfMessage.count else { return nil }
        self.bytes = bytes
        self.maximumUpdateLength = maximumUpdateLength
    }

    /// The chunk to send now (the same one until `markSent()`), or nil once `EOM` has been sent.
    public func next() -> [UInt8]? {
        if offset < bytes.count { return Array(bytes[offset..<min(offset + maximumUpdateLength, bytes.count)]) }
        return isEndSent ? nil : Self.endOfMessage
    }

    /// Records that the chunk `next()` returned was accepted by the queue; does nothing once finished.
    public mutating func markSent() {
        if offset < bytes.count {
            offset = min(offset + maximumUpdateLength, bytes.count)
        } else {
            isEndSent = true
        }
    }

    /// Whether the whole text and `EOM` have been sent.
    public var isFinished: Bool { isEndSent }
}
