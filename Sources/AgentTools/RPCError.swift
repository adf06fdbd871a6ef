import ControlProtocol

/// A JSON-RPC 2.0 error object (JSON-RPC 2.0 section 5.1): the request's fault (a parse error, an invalid request,
/// an unknown method, bad parameters) or the server's (an internal error), with a message for the person reading
/// the client's log.
struct RPCError: Error, Hashable, Sendable {
    /// The code JSON-RPC 2.0 section 5.1 reserves for the fault.
    let code: Int64
    /// What went wrong, in one sentence.
    let message: String

    /// The line is not JSON.
    static func parseError(_ message: String) -> RPCError { RPCError(code: -32700, message: message) }
    /// The JSON is not a request, a notification or a response.
    static func invalidRequest(_ message: String) -> RPCError { RPCError(code: -32600, message: message) }
    /// No such method.
    static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: -32601, message: "method not found: \(method)")
    }
    /// The method's parameters are wrong.
    static func invalidParams(_ message: String) -> RPCError { RPCError(code: -32602, message: message) }
    /// The server could not do what was asked.
    static func internalError(_ message: String) -> RPCError { RPCError(code: -32603, message: message) }

    /// The `error` member of a response.
    var json: JSONValue { ["code": .integer(code), "message": .string(message)] }
}
