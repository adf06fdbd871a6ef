import ControlProtocol
import GATTModel
import Peripheral

/// Encodes event records as JSON lines: one object per line, `time` (ISO 8601, UTC, milliseconds) and `type` first,
/// so `jq`, `grep` and a CI log viewer read them. Pure: it returns text; writing the log is the caller's.
///
/// Keys are camelCase; `type` values are kebab-case like the profile's keys; bytes are hex strings spelled as
/// everywhere in blemu (`Hex`: uppercase, no separator), so a value in the log matches `blemu show` and the probe.
public enum EventLineEncoder {
    /// One JSON object for the record, without the trailing newline.
    public static func encode(_ record: EventRecord) -> String {
        var fields: [(String, JSONValue)] = [("time", .string(record.time.iso8601))]
        switch record.event {
        case .stateChanged(let state):
            fields += [("type", .string("state")), ("state", .string(state))]
        case .connected(let central):
            fields += [("type", .string("connected")), ("central", .string(central))]
        case .disconnected(let central, let reason):
            fields += [("type", .string("disconnected")), ("central", .string(central))]
            if let reason { fields += [("reason", .string(reason.code)), ("message", .string(reason.message))] }
        case .request(let operation, let central, let id, let value, let answer, let latency):
            fields += [
                ("type", .string("request")), ("operation", .string(operation.rawValue)), ("central", .string(central)),
                ("characteristic", .string(id)), ("value", .string(hex(value))),
            ]
            switch answer {
            case .success: fields.append(("result", .string("success")))
            case .error(let error, let asked):
                fields += [
                    ("result", .string("error")), ("code", .integer(Int64(error.rawValue))),
                    ("error", .string(error.description)),
                ]
                if let asked {
                    fields += [("askedCode", .integer(Int64(asked.rawValue))), ("asked", .string(asked.description))]
                }
            }
            fields.append(("latencyMs", JSONValue.number((latency.seconds * 1_000_000).rounded() / 1000)))
        case .subscribed(let central, let id):
            fields += [("type", .string("subscribed")), ("central", .string(central)), ("characteristic", .string(id))]
        case .unsubscribed(let central, let id):
            fields += [
                ("type", .string("unsubscribed")), ("central", .string(central)), ("characteristic", .string(id)),
            ]
        case .notification(let id, let value, let isIndication, let centrals):
            fields += [
                ("type", .string(isIndication ? "indication" : "notification")), ("characteristic", .string(id)),
                ("value", .string(hex(value))), ("centrals", .integer(Int64(centrals))),
            ]
        case .queueFull(let id):
            fields += [("type", .string("queue-full")), ("characteristic", .string(id))]
        case .outboxFull(let id, let dropped):
            fields += [
                ("type", .string("outbox-full")), ("characteristic", .string(id)),
                ("dropped", .integer(Int64(dropped))),
            ]
        case .queueReady:
            fields.append(("type", .string("queue-ready")))
        case .fault(let description, let id):
            fields += [("type", .string("fault")), ("fault", .string(description))]
            if let id { fields.append(("characteristic", .string(id))) }
        case .restarted(let reason):
            fields += [("type", .string("restart")), ("reason", .string(reason))]
        case .pairing(let pairing):
            fields += [
                ("type", .string("pairing")), ("central", .string(pairing.central)),
                ("method", .string(pairing.method.rawValue)),
            ]
            if let passkey = pairing.passkey { fields.append(("passkey", .string(PairingEvent.spelled(passkey)))) }
            fields.append(("result", .string(pairing.accepted ? "accepted" : "rejected")))
        case .reset(let changed):
            fields += [("type", .string("reset")), ("changed", .array(changed.map(JSONValue.string)))]
        case .linesDropped(let count):
            fields += [("type", .string("lines-dropped")), ("count", .integer(Int64(count)))]
        case .protocolCase(let trace):
            fields += [
                ("type", .string("protocol")), ("characteristic", .string(trace.characteristicID)),
                ("request", .string(trace.request)), ("case", .string(trace.acted)),
                ("state", .object(Dictionary(trace.changes.map { ($0.name, $0.value.json) }) { _, last in last })),
            ]
            if !trace.fields.isEmpty {
                fields.append(
                    ("fields", .object(Dictionary(trace.fields.map { ($0.name, $0.value.json) }) { _, last in last })))
            }
        case .handler(let request, let id, let outcome):
            fields.append(("type", .string("handler")))
            if let request { fields.append(("request", .integer(Int64(request)))) }
            if let id { fields.append(("characteristic", .string(id))) }
            fields.append(("outcome", .string(outcome)))
        }
        // In this order, not sorted: `time` and `type` first, as a person reads the log.
        return JSONValue.orderedObjectText(fields)
    }

    /// Several records, each on its own line, each line ending in a newline.
    public static func encode(_ records: [EventRecord]) -> String {
        records.map { encode($0) + "\n" }.joined()
    }

    private static func hex(_ bytes: [UInt8]) -> String { Hex.string(bytes, separator: "") }
}
