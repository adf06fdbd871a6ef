/// Why a tool call failed, as the agent reads it: the command, then the reason (`get: unknown characteristic
/// `nope``), the control socket's own words where it answered.
public struct ToolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The tool (or command) that failed.
    public var tool: String
    /// Why.
    public var reason: String

    /// An error of `tool` for `reason`.
    public init(_ tool: String, _ reason: String) {
        self.tool = tool
        self.reason = reason
    }

    /// `tool: reason`.
    public var description: String { "\(tool): \(reason)" }
}
