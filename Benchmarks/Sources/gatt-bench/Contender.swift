/// The characteristics every contender publishes, by role, under the same UUIDs (Benchmarks/profiles/bench.yaml, c/gatt-app.c,
/// python/*.py): read/write 20 and 512 bytes, write-without-response, notify, and a control point whose write
/// `u32 LE N` asks the app for N notifications on `notify`, and whose read returns how many writes without
/// response it has received (u32 LE).
enum Role: String, CaseIterable, Sendable, Codable {
    case rw20, rw512, wnr, notify, control

    var uuid: String {
        switch self {
        case .rw20: "b1e70001-be4c-4f2a-9c1e-6d0a5e7b0c00"
        case .rw512: "b1e70002-be4c-4f2a-9c1e-6d0a5e7b0c00"
        case .wnr: "b1e70003-be4c-4f2a-9c1e-6d0a5e7b0c00"
        case .notify: "b1e70004-be4c-4f2a-9c1e-6d0a5e7b0c00"
        case .control: "b1e70005-be4c-4f2a-9c1e-6d0a5e7b0c00"
        }
    }
}

/// How the harness learns how many writes without response an app received.
enum WriteCount: Sendable {
    /// Read the control point (u32 LE).
    case controlPoint
    /// Ask `blemu run`'s control socket for its `writesWithoutResponse` counter.
    case controlCounters
    /// The app cannot tell: say why.
    case none(String)
}

/// One GATT application under test and how to start it.
struct Contender: Sendable {
    var name: String
    var key: String
    /// Characteristic UUID per role; a missing role is a workload this contender cannot run.
    var roles: [Role: String] = Dictionary(uniqueKeysWithValues: Role.allCases.map { ($0, $0.uuid) })
    var advertises = true
    var isPythonPeer = false
    var isLimit = false
    var isBlemu = false
    var writeCount: WriteCount = .controlPoint
    /// Why a control-point write cannot trigger notifications, when it cannot.
    var noTrigger: String? = nil
    /// A `blemu run --control` socket that triggers notifications instead of the control point.
    var controlSocket: String? = nil
    /// The characteristics it publishes besides `extra` ones (nil: whatever it has).
    var baseCharacteristics: Int? = 5
    var supportsScaling = true
    /// Why it cannot run at all on this machine (missing venv, mirror), when it cannot.
    var skip: String? = nil
    /// The command for a run with `extra` additional read characteristics; may write files into `workspace`.
    var command: @Sendable (_ extra: Int, _ workspace: String) throws -> [String]
}

/// The YAML of Benchmarks/profiles/bench.yaml with a service of `extra` read characteristics appended (the generator for the
/// 10 → 1000 characteristic scaling). The base profile keeps `services:` as its last key, so appending works.
func scaledProfile(base: String, extra: Int) -> String {
    guard extra > 0 else { return base }
    var text = base.hasSuffix("\n") ? base : base + "\n"
    text += "  - id: scale\n    uuid: b1e71000-be4c-4f2a-9c1e-6d0a5e7b0c00\n    characteristics:\n"
    let value = String(repeating: "00", count: 20)
    for index in 0..<extra {
        let hex = String(index, radix: 16)
        let padded = String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        text +=
            "      - { id: s\(index), uuid: b1e8\(padded)-be4c-4f2a-9c1e-6d0a5e7b0c00, properties: [read], "
            + "initial: { hex: \"\(value)\" } }\n"
    }
    return text
}
