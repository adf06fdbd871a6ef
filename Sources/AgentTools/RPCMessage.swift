import ControlProtocol

/// One line from an MCP client, as JSON-RPC 2.0 (section 4) and MCP's stdio transport frame it: one message a line,
/// no batches (MCP 2025-06-18 removed them).
enum RPCMessage: Equatable, Sendable {
    /// A call that wants an answer carrying `id`.
    case request(id: JSONValue, method: String, params: [String: JSONValue])
    /// A call that wants no answer.
    case notification(method: String, params: [String: JSONValue])
    /// An answer to a request of the server's (this server sends none), or a notification too malformed to act on:
    /// dropped, since neither is answered (JSON-RPC 2.0 section 4.1).
    case ignored
    /// Not a message: answered with this error, under `id` when the line had a usable one (else `null`).
    case invalid(id: JSONValue, RPCError)

    /// The message `line` holds.
    init(line: String) {
        let value: JSONValue
        do { value = try JSONValue(parsing: line) } catch {
            self = .invalid(id: .null, .parseError("not JSON: \(error.description)"))
            return
        }
        guard let object = value.object else {
            let reason = value.array == nil ? "a message is a JSON object" : "batches are not supported"
            self = .invalid(id: .null, .invalidRequest(reason))
            return
        }
        // An id is a string or a number (section 4); anything else cannot be answered under it.
        let id = object["id"].flatMap { id -> JSONValue? in
            switch id {
            case .string, .integer, .real: id
            default: nil
            }
        }
        guard object["jsonrpc"] == "2.0" else {
            self = .invalid(id: id ?? .null, .invalidRequest("`jsonrpc` must be \"2.0\""))
            return
        }
        guard let method = object["method"] else {
            self =
                object["result"] != nil || object["error"] != nil
                ? .ignored
                : .invalid(
                    id: id ?? .null, .invalidRequest("a message has a `method`, a `result` or an `error`"))
            return
        }
        guard let name = method.string else {
            self = .invalid(id: id ?? .null, .invalidRequest("`method` must be a string"))
            return
        }
        let params: [String: JSONValue]
        switch object["params"] {
        case nil, .null?: params = [:]
        case .object(let members)?: params = members
        default:
            self =
                object["id"] == nil
                ? .ignored : .invalid(id: id ?? .null, .invalidParams("`params` must be an object"))
            return
        }
        if object["id"] == nil {
            self = .notification(method: name, params: params)
        } else if let id {
            self = .request(id: id, method: name, params: params)
        } else {
            self = .invalid(id: .null, .invalidRequest("`id` must be a string or a number"))
        }
    }

    /// The response line answering `id` with `result`.
    static func result(_ result: JSONValue, for id: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "id": id, "result": result]).text
    }

    /// The response line answering `id` with `error`.
    static func error(_ error: RPCError, for id: JSONValue) -> String {
        JSONValue.object(["jsonrpc": "2.0", "id": id, "error": error.json]).text
    }

    /// A notification line of `method`.
    static func notification(_ method: String, _ params: [String: JSONValue]) -> String {
        JSONValue.object(["jsonrpc": "2.0", "method": .string(method), "params": .object(params)]).text
    }
}
