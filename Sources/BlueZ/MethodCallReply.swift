import DBus
import GATTModel
import Logging
@_spi(Backend) import Peripheral

/// The answer to bluetoothd's `ReadValue` or `WriteValue` on a characteristic. It owns the `MethodCall`, and the
/// request's `Responder` sends it once, with the first answer: no lock of its own guards the call.
struct MethodCallReply: RequestReply, ~Copyable {
    /// The call to answer, taken out by `send`; dropped unanswered (a reply never sent), its own `deinit` answers
    /// `Failed`.
    var call: MethodCall?
    /// Which D-Bus error an ATT error becomes depends on the operation (`BlueZErrorReply`).
    let operation: AttributeOperation
    /// The request, for the debug line that records its answer.
    let summary: RequestSummary
    /// Where that line goes; nil when debug lines are not written.
    let logger: Logger?

    /// Sends a read's bytes, a write's empty success, or the D-Bus error bluetoothd turns back into the ATT error.
    mutating func send(_ result: Result<[UInt8], ATTError>) {
        guard let call = call.take() else { return }
        switch result {
        case .success(let bytes) where operation == .read:
            logger?.debug("\(summary) -> \(bytes.count) bytes \(BlueZBackend.hex(bytes))")
            call.reply([.bytes(bytes)])
        case .success:
            logger?.debug("\(summary) -> ok")
            call.reply()
        case .failure(let error):
            let reply = BlueZErrorReply(for: error, operation: operation)
            logger?.debug("\(summary) -> \(error) as \(reply.name)")
            call.fail(reply.name, reply.message)
        }
    }
}
