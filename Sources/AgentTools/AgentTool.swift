import ControlProtocol

/// The tools `blemu mcp` offers: one per command of the control protocol (`ControlCommand`), with `events` split
/// in two, the latest events (`recent_events`) and the next one (`wait_for_event`), and none for `handle`, a
/// stream that outlives a tool call. Each sends exactly its command.
public enum AgentTool: String, CaseIterable, Sendable {
    /// `describe`: the profile served.
    case describe
    /// `status`: state, adapter, BlueZ version, and the advertisement's bytes.
    case status
    /// `state`: the device's state variables, optionally set first.
    case state
    /// `get`: one characteristic's value.
    case get
    /// `set`: stores a value, whole or by fields.
    case set
    /// `notify`: sends the current value to subscribers.
    case notify
    /// `fault`: arms an error, a delay or a link action on a coming request.
    case fault
    /// `schedules`: lists, pauses or resumes the schedules.
    case schedules
    /// `centrals`: who is connected and subscribed.
    case centrals
    /// `counters`: requests, answers and notifications counted.
    case counters
    /// `pairing`: the latest pairing steps.
    case pairing
    /// `reset`: the device as the profile starts it.
    case reset
    /// `advertising`: starts or stops advertising.
    case advertising
    /// `disconnect`: drops links.
    case disconnect
    /// `events`: the latest events, filtered.
    case recentEvents = "recent_events"
    /// `events` with `follow`: the first matching event from now on.
    case waitForEvent = "wait_for_event"

    /// The control command the tool sends.
    public var command: ControlCommand {
        switch self {
        case .describe: .describe
        case .status: .status
        case .state: .state
        case .get: .get
        case .set: .set
        case .notify: .notify
        case .fault: .fault
        case .schedules: .schedules
        case .centrals: .centrals
        case .counters: .counters
        case .pairing: .pairing
        case .reset: .reset
        case .advertising: .advertising
        case .disconnect: .disconnect
        case .recentEvents, .waitForEvent: .events
        }
    }

    /// The tools that send `command`, so a command the protocol gains does not compile until it has a tool.
    public static func tools(sending command: ControlCommand) -> [AgentTool] {
        switch command {
        case .describe: [.describe]
        case .status: [.status]
        case .state: [.state]
        case .get: [.get]
        case .set: [.set]
        case .notify: [.notify]
        case .fault: [.fault]
        case .schedules: [.schedules]
        case .centrals: [.centrals]
        case .counters: [.counters]
        case .pairing: [.pairing]
        case .reset: [.reset]
        case .advertising: [.advertising]
        case .disconnect: [.disconnect]
        case .events: [.recentEvents, .waitForEvent]
        // A handler holds its connection and answers requests as they come; a tool call is one exchange, so an
        // agent drives a device with the other tools instead (docs/control-and-events.md, "Handlers").
        case .handle: []
        }
    }
}
