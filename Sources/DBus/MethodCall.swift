internal import CDBus
import Logging

/// An incoming method call that must be answered exactly once: `reply` and `fail` consume it, so a second answer
/// does not compile. Dropping it unanswered answers `StandardErrorName.failed` from `deinit` (and logs an
/// error). A call flagged no-reply is still consumed and counted, but nothing is sent.
public struct MethodCall: ~Copyable, Sendable {
    let core: ConnectionCore
    let message: Message
    /// Where and from whom; see `CallContext`.
    public let context: CallContext
    /// The arguments, decoded (empty for a method declared `decoding: .inPlace`). Any `UnixFD` among them is a
    /// duplicate this handler owns and must close.
    public let arguments: [DBusValue]
    /// The declared output signature, checked against the reply; nil for built-in methods.
    let outputs: Signature?
    /// Set by the consuming answers so `deinit` knows the call was answered.
    private var isAnswered = false

    init(core: ConnectionCore, message: Message, context: CallContext, arguments: [DBusValue], outputs: Signature?) {
        self.core = core
        self.message = message
        self.context = context
        self.arguments = arguments
        self.outputs = outputs
    }

    /// The caller's unique bus name (e.g. `:1.42`); compare it with the owner of a well-known name to authorise.
    public var sender: String? { context.sender }
    /// The object path called.
    public var path: ObjectPath { context.path }
    /// The method name.
    public var member: String { context.member }
    /// The signature the arguments arrived with (read from the message on demand: most handlers never ask).
    public var signature: Signature { message.signature }
    /// False when the caller set the no-reply flag: answering then sends nothing.
    public var expectsReply: Bool { message.expectsReply }

    /// Reads the arguments in place, typed (`ArgumentReader`), for a method declared `decoding: .inPlace`; any
    /// method may, as often as it likes: each reader starts at the first argument.
    public func readArguments<R: ~Copyable, E: Error>(_ body: (inout ArgumentReader) throws(E) -> R) throws(E) -> R {
        var reader = ArgumentReader(message)
        return try body(&reader)
    }

    /// Answers with `values`. If they do not marshal or do not match the declared output signature, the caller
    /// gets `Failed` instead and the mistake is logged.
    public consuming func reply(_ values: [DBusValue] = []) {
        isAnswered = true
        core.answer(message, context: context, with: values, outputs: outputs)
    }

    /// Answers with the D-Bus error `name` (an invalid name is sent as `Failed`) and a message.
    public consuming func fail(_ name: String, _ text: String) {
        isAnswered = true
        core.answer(message, context: context, errorName: name, text: text)
    }

    /// Answers with `error`: a `DBusError` under its own name, anything else as `Failed` with its description.
    public consuming func fail(_ error: any Error) {
        isAnswered = true
        if let error = error as? DBusError {
            core.answer(message, context: context, errorName: error.name, text: error.message)
        } else {
            core.answer(message, context: context, errorName: StandardErrorName.failed, text: "\(error)")
        }
    }

    deinit {
        if !isAnswered {
            core.logger.error(
                "method call dropped without an answer; answering \(StandardErrorName.failed)",
                metadata: core.metadata(context))
            core.answer(
                message, context: context, errorName: StandardErrorName.failed,
                text: "the handler dropped the call without answering", dropped: true)
        }
    }
}
