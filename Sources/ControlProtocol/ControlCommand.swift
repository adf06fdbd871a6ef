/// The control protocol's commands: the one table the socket's server (`ControlCommands`), `blemu ctl` (one
/// subcommand per case, `ControlVerbs`) and the Python client are checked against. Adding a case without handling
/// it does not compile in either executable, and a test fails until python/ and docs/control-and-events.md know it.
public enum ControlCommand: String, CaseIterable, Sendable {
    /// The value, as hex and decoded fields.
    case get
    /// Stores a value, whole or by fields; subscribers are notified.
    case set
    /// Sends the current value now, N times, to every subscriber or one central.
    case notify
    /// The connected centrals, their subscriptions, and the latest disconnects.
    case centrals
    /// Drops the link of every connected central, or of one: the device walking out of range.
    case disconnect
    /// Arms a fault on a coming read or write: an error, a delay, or a link action after answering.
    case fault
    /// Starts or stops advertising.
    case advertising
    /// Lists the schedules, or pauses or resumes one or all.
    case schedules
    /// The latest pairing steps (a displayed passkey to type).
    case pairing
    /// Requests and answers, notifications, queue and log counters.
    case counters
    /// Puts the device back as the profile starts it: values, schedules, faults (not links or subscriptions).
    case reset
    /// The latest events, or every event from now on, as the event log's lines.
    case events
    /// The profile served: its name, pairing, services and characteristics with their fields (as `blemu show --json`).
    case describe
    /// The device as it runs: state, advertising, adapter, bluetoothd's version, and the advertisement's bytes.
    case status
    /// The device's own state variables (`behaviour.state`), or sets some of them.
    case state
    /// Turns the connection into a request stream: blemu sends the named characteristics' requests as lines, and
    /// each answer line decides one.
    case handle

    /// The longest line either side reads, in bytes: a longer request is answered with an error and discarded as it
    /// arrives, so a client that never sends a newline cannot make the server buffer without end.
    public static let maximumLineLength = 1 << 20

    /// What the command does, in one line of at most 74 characters.
    public var summary: String {
        switch self {
        case .get: "the value (hex and decoded fields)"
        case .set: "store a value; subscribers are notified"
        case .notify: "notify the current value now (N times; to one central only)"
        case .centrals: "connected centrals, their subscriptions, the latest disconnects"
        case .disconnect: "drop every central's link now, or one central's: the device out of range"
        case .fault: "fail (E: name or 0xNN), delay, or then X (disconnect, stop-advertising)"
        case .advertising: "start or stop advertising"
        case .schedules: "list the schedules; hold or release one (or all)"
        case .pairing: "the latest pairing steps: a displayed passkey to type"
        case .counters: "requests and answers, notifications, queue and event-log counters"
        case .reset: "values, schedules and faults as at start (links and subscriptions stay)"
        case .events: "the latest events; with --follow, each event from now on as it happens"
        case .describe: "the profile served: services, characteristics, fields (blemu show --json)"
        case .status: "state, adapter, BlueZ version, and the advertisement's bytes (blemu adv)"
        case .state: "the device's state variables (behaviour.state); NAME=VALUE sets them"
        case .handle: "answer ID's requests: request lines out, answer lines in (stdin)"
        }
    }
}
