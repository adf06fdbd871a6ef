import ControlProtocol

/// What a `tools/call` answers (MCP 2025-06-18, "Tools"): the socket's response as JSON text and as structured
/// content, or an error result whose text names the command and the reason.
public struct ToolResult: Hashable, Sendable {
    /// The text content: the response as one line of JSON, or the error.
    public let text: String
    /// The response object (nil for an error).
    public let structured: JSONValue?
    /// Whether the call failed.
    public let isError: Bool

    /// The structured content's member `key`.
    public subscript(key: String) -> JSONValue? { structured?[key] }

    /// The result as `tools/call` carries it.
    public var json: JSONValue {
        var result: [String: JSONValue] = [
            "content": [["type": "text", "text": .string(text)]], "isError": .bool(isError),
        ]
        if let structured { result["structuredContent"] = structured }
        return .object(result)
    }
}

/// One resource's contents, as `resources/read` carries them (MCP 2025-06-18, "Resources"): text only.
public struct ResourceText: Hashable, Sendable {
    /// The resource's URI.
    public let uri: String
    /// Its media type.
    public let mimeType: String
    /// Its text.
    public let text: String

    /// The contents as `resources/read` carries them.
    public var json: JSONValue {
        ["uri": .string(uri), "mimeType": .string(mimeType), "text": .string(text)]
    }
}
