import ControlProtocol

extension AgentTool {
    /// One argument of a tool: its name, its JSON Schema (with its description) and whether it is required.
    struct Parameter {
        /// The argument's name, as the control protocol spells it where it passes one on.
        let name: String
        /// The JSON Schema of its value.
        let schema: JSONValue
        /// Whether a call must give it.
        let isRequired: Bool
    }

    /// How long `wait_for_event` waits when the call does not say, and the longest it may be asked to.
    static let defaultWait = 10.0, longestWait = 300.0
    /// How many events the control socket keeps, so the most `recent_events` can answer.
    static let recentEventsKept = 256
    /// The most notifications one `notify` sends (the control socket's bound).
    static let largestNotifyCount = 100_000

    /// The tool as `tools/list` offers it (MCP 2025-06-18, "Tools"): name, description, input schema and hints.
    public var definition: JSONValue {
        [
            "name": .string(rawValue), "description": .string(summary), "inputSchema": inputSchema,
            "annotations": annotations,
        ]
    }

    /// The JSON Schema of the tool's arguments: an object of exactly these properties.
    public var inputSchema: JSONValue {
        var properties: [String: JSONValue] = [:]
        for parameter in parameters { properties[parameter.name] = parameter.schema }
        var schema: [String: JSONValue] = [
            "type": "object", "properties": .object(properties), "additionalProperties": false,
        ]
        let required = parameters.filter(\.isRequired).map { JSONValue.string($0.name) }
        if !required.isEmpty { schema["required"] = .array(required) }
        return .object(schema)
    }

    /// What the tool does, for the agent choosing it.
    var summary: String {
        switch self {
        case .describe:
            """
            The profile this device serves: its name, pairing, services and their characteristics (id, uuid, \
            properties, permissions, security, fields with name, type and starting value, descriptors), and \
            `behaviour`: its schedules, write rules and faults in words. Call it first: the other tools name \
            characteristics by the `id` it lists.
            """
        case .status:
            """
            The device as it runs: `state` (poweredOn, ...), `advertising` (on the air or not), `adapter`, `bluez` \
            (bluetoothd's version, null when unknown), and `advertisement`: its `adv` and `scanResponse` bytes \
            (hex) and each AD structure with who writes it and what it says, as `blemu adv` lays them out.
            """
        case .state:
            """
            The device's own state variables (the profile's `behaviour.state`: a trainer's `control`, its \
            `target-power`), by name, as its protocols keep them between requests. `set` changes some first, each \
            checked against its type; `reset` puts them all back.
            """
        case .get:
            "A characteristic's current value: `hex` (uppercase, no separators) and `fields`, decoded by the profile."
        case .set:
            """
            Stores a characteristic's value, whole (`hex`) or by fields (`fields`: only the named fields change, the \
            others keep the current value); subscribed centrals are notified as for any change. A running schedule \
            of the characteristic writes its generated fields again at its next tick: pause it with `schedules` \
            first to hold a value. Give exactly one of `hex` and `fields`.
            """
        case .notify:
            """
            Sends the characteristic's current value to its subscribers now, `count` times in order, or to one \
            subscribed `central`. Each is recorded as a `notification` (or `indication`) event, with how many \
            centrals it reached (0 when nobody is subscribed).
            """
        case .fault:
            """
            Arms a fault that fires once, on the `nth` matching read or write request from now: answer it with an \
            ATT `error`, delay the answer by `delayMs`, or answer and then apply `effect`. Give exactly one of \
            `error`, `delayMs` and `effect`.
            """
        case .schedules:
            """
            Lists the profile's schedules (`id`, `intervalMs`, `recorded`, `paused`, `running`), or pauses or \
            resumes those of one characteristic (`id`) or of all. A paused schedule holds its characteristic's \
            value; a resumed one ticks again one interval later.
            """
        case .centrals:
            """
            The connected centrals (`id`, `maximumUpdateValueLength`, `subscriptions`) and the latest 16 \
            disconnects, oldest first, with bluetoothd's `reason` where it gives one.
            """
        case .counters:
            """
            The device's counters: requests, answered, responded, rejected, expired, dropped, \
            writesWithoutResponse, notificationsQueued, notificationsSent, notificationsToNobody, queueFull, \
            waiting, notificationsDropped, eventLinesLost. Read them before and after a step for its own figures.
            """
        case .pairing:
            """
            The latest 16 pairing steps, oldest first: `central`, `method`, `passkey` (one the device displays, to \
            type on the central), `accepted`.
            """
        case .reset:
            """
            Puts the device back as the profile starts it: every value, the schedules from their start, faults \
            armed through the socket dropped. Links, subscriptions and counters stay, and subscribers are not \
            notified. Answers `changed`: the characteristics whose value went back.
            """
        case .advertising:
            "Starts or stops advertising."
        case .disconnect:
            """
            Drops the link of every connected central, or of one (`central`), as a device walking out of range \
            would; each leaves with a `disconnected` event. Answers `disconnected`: the centrals dropped.
            """
        case .recentEvents:
            """
            The latest events the device recorded (the control socket keeps \(Self.recentEventsKept)), oldest \
            first: those of `type` and `characteristic` when given, the last `limit` of them. Each is an event-log \
            object with `time` (ISO 8601, UTC) and `type`. To see what a call just caused (the `notification` a \
            `notify` sent), look here after it.
            """
        case .waitForEvent:
            """
            Waits for the first event of `type` (and `characteristic`) that happens after this call starts, and \
            returns it; an error when none has come within `timeout_seconds`. Only events from the call on count: \
            for one an earlier call already caused, use `recent_events`. A call with a progress token gets a \
            progress notification once it is listening, so a client can then start what it waits for.
            """
        }
    }

    /// The tool's arguments.
    var parameters: [Parameter] {
        switch self {
        case .describe, .status, .centrals, .counters, .pairing, .reset: []
        case .state:
            [
                Parameter(
                    name: "set",
                    schema: [
                        "type": "object", "minProperties": 1,
                        "description": """
                        Variable name to value, for the variables `state` lists: a number, true or false, or text, \
                        as the variable's type takes. E.g. {"target-power": 200}.
                        """,
                    ], isRequired: false)
            ]
        case .get: [Self.id]
        case .set:
            [
                Self.id,
                Parameter(
                    name: "hex",
                    schema: [
                        "type": "string",
                        "description":
                            "The whole value as hex, e.g. \"50\" or \"0E5A\" (spaces or colons may part bytes).",
                    ], isRequired: false),
                Parameter(
                    name: "fields",
                    schema: [
                        "type": "object", "minProperties": 1,
                        "description": """
                        Field name to value, for the fields `describe` lists: a number for integer and float \
                        fields, true or false for a boolean, a list of flag names for flags, text for utf8, hex \
                        for bytes. E.g. {"percent": 80}.
                        """,
                    ], isRequired: false),
            ]
        case .notify:
            [
                Self.id,
                Parameter(
                    name: "count",
                    schema: [
                        "type": "integer", "minimum": 1, "maximum": .integer(Int64(Self.largestNotifyCount)),
                        "default": 1,
                        "description": "How many times to send the value, queued in order.",
                    ], isRequired: false),
                Parameter(
                    name: "central",
                    schema: [
                        "type": "string",
                        "description": "Send only to this subscribed central (its id from `centrals`).",
                    ], isRequired: false),
            ]
        case .fault:
            [
                Parameter(
                    name: "operation",
                    schema: [
                        "type": "string", "enum": ["read", "write"],
                        "description": "The kind of request the fault fires on.",
                    ], isRequired: true),
                Parameter(
                    name: "id",
                    schema: [
                        "type": "string",
                        "description": "Only requests for this characteristic (any characteristic when absent).",
                    ], isRequired: false),
                Parameter(
                    name: "nth",
                    schema: [
                        "type": "integer", "minimum": 1, "default": 1,
                        "description": "Fire on the nth matching request from now.",
                    ], isRequired: false),
                Parameter(
                    name: "error",
                    schema: [
                        "type": "string",
                        "description": """
                        Answer with this ATT error: a name (unlikely-error, insufficient-authentication, ...: \
                        docs/profile-format.md lists them) or a code as 0x80.
                        """,
                    ], isRequired: false),
                Parameter(
                    name: "delayMs",
                    schema: [
                        "type": "integer", "minimum": 0,
                        "description": "Delay the answer by this many milliseconds instead.",
                    ], isRequired: false),
                Parameter(
                    name: "effect",
                    schema: [
                        "type": "string", "enum": ["disconnect", "stop-advertising"],
                        "description": "Answer, then drop the link or stop advertising.",
                    ], isRequired: false),
            ]
        case .schedules:
            [
                Parameter(
                    name: "action",
                    schema: [
                        "type": "string", "enum": ["list", "pause", "resume"], "default": "list",
                        "description": "List the schedules, or pause or resume them.",
                    ], isRequired: false),
                Parameter(
                    name: "id",
                    schema: [
                        "type": "string",
                        "description": """
                        With pause or resume: the characteristic whose schedules to hold or release (all when \
                        absent).
                        """,
                    ], isRequired: false),
            ]
        case .advertising:
            [
                Parameter(
                    name: "action",
                    schema: [
                        "type": "string", "enum": ["start", "stop"], "description": "Start or stop advertising.",
                    ],
                    isRequired: true)
            ]
        case .disconnect:
            [
                Parameter(
                    name: "central",
                    schema: [
                        "type": "string",
                        "description": "Drop only this connected central's link (its id from `centrals`).",
                    ], isRequired: false)
            ]
        case .recentEvents:
            [
                Self.eventType(isRequired: false),
                Self.eventCharacteristic,
                Parameter(
                    name: "limit",
                    schema: [
                        "type": "integer", "minimum": 1, "maximum": .integer(Int64(Self.recentEventsKept)),
                        "default": .integer(Int64(Self.recentEventsKept)),
                        "description": "At most this many events: the latest that match.",
                    ], isRequired: false),
            ]
        case .waitForEvent:
            [
                Self.eventType(isRequired: true),
                Self.eventCharacteristic,
                Parameter(
                    name: "timeout_seconds",
                    schema: [
                        "type": "number", "exclusiveMinimum": 0, "maximum": .number(Self.longestWait),
                        "default": .number(Self.defaultWait),
                        "description": "How long to wait for the event before answering an error.",
                    ], isRequired: false),
            ]
        }
    }

    /// Hints for the client (MCP's tool annotations): which tools only read, which undo state.
    var annotations: JSONValue {
        switch self {
        case .describe, .status, .get, .centrals, .counters, .pairing, .recentEvents, .waitForEvent:
            ["readOnlyHint": true, "openWorldHint": false]
        case .set, .advertising, .schedules, .state:
            ["readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false]
        case .notify, .fault:
            ["readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false]
        case .reset, .disconnect:
            ["readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false]
        }
    }

    /// `id`: the characteristic a command is about.
    private static let id = Parameter(
        name: "id",
        schema: [
            "type": "string",
            "description": "The characteristic's id, as `describe` lists it (e.g. battery-level).",
        ], isRequired: true)

    /// `type`: an event-log type.
    private static func eventType(isRequired: Bool) -> Parameter {
        Parameter(
            name: "type",
            schema: [
                "type": "string", "enum": .array(EventFilter.types.map(JSONValue.string)),
                "description": "The event's type (docs/control-and-events.md, \"The event log\").",
            ], isRequired: isRequired)
    }

    /// `characteristic`: the id an event is about.
    private static let eventCharacteristic = Parameter(
        name: "characteristic",
        schema: [
            "type": "string",
            "description": "Only events about this characteristic id (events without one then never match).",
        ], isRequired: false)
}
