import BlueZModel
import GATTModel

/// What `blemu probe` saw of one peripheral: the device as scanned, its GATT tree as bluetoothd resolved it, every
/// value read and every notification received. Encodes as the `--json` report (schema in docs of `ProbeCommand`).
public struct ProbeReport: Codable, Sendable, Equatable {
    /// The adapter that acted as the central: "hci1".
    public var adapter: String
    /// The peripheral as discovery saw it.
    public var device: ProbeDevice
    /// Primary and secondary services in handle order.
    public var services: [ProbeService]
    /// How long the listening window for notifications was, in seconds.
    public var listenSeconds: Double
    /// Seconds from the start of the probe to each milestone.
    public var timings: ProbeTimings
    /// Where the link dropped before the probe was done with it; nil when it held. A report with a lost link is
    /// incomplete: what came after the drop is missing.
    public var linkLoss: ProbeLinkLoss?
    /// The writes made after listening and what became of each (`blemu verify --writes`); nil when none were asked
    /// for, as `blemu probe` never writes.
    public var writes: [ProbeWrite]?
    /// Whether the link was paired, asked for or not; nil in reports of earlier blemu versions.
    public var pairing: ProbePairing?

    /// A report from its parts.
    public init(
        adapter: String, device: ProbeDevice, services: [ProbeService], listenSeconds: Double, timings: ProbeTimings,
        linkLoss: ProbeLinkLoss? = nil, writes: [ProbeWrite]? = nil
    ) {
        self.adapter = adapter
        self.device = device
        self.services = services
        self.listenSeconds = listenSeconds
        self.timings = timings
        self.linkLoss = linkLoss
        self.writes = writes
    }

    /// Every characteristic of every service, in order.
    public var characteristics: [ProbeCharacteristic] { services.flatMap(\.characteristics) }
}

/// What the probe knew of the link's pairing: a read the device guards is refused on a link that was never
/// paired, and bluetoothd's client pairs by itself when a read is refused for want of encryption (src/shared/att.c
/// `change_security`), so whether a guarded value was open can only be told from a link that stayed unpaired.
public struct ProbePairing: Codable, Sendable, Equatable {
    /// The probe paired before reading (`--pair`).
    public var requested: Bool
    /// bluetoothd's `Device1.Paired` when the device was found, before connecting: a bond from before the probe.
    public var before: Bool
    /// `Device1.Paired` after the reads: true when the link was paired by then, asked for or not.
    public var afterReads: Bool

    /// A pairing record from its parts.
    public init(requested: Bool, before: Bool, afterReads: Bool) {
        self.requested = requested
        self.before = before
        self.afterReads = afterReads
    }
}

/// Whether bluetoothd reported the device paired just before and just after one step of the probe that a device may
/// refuse for want of pairing: a subscription, or a `guarded` write. bluetoothd's client answers Insufficient
/// Encryption or Authentication by pairing and sending the request again (src/shared/att.c `change_security`, 5.66
/// to 5.87), so a link that became paired during the step was refused for want of it, and one paired before the step
/// cannot tell.
public struct ProbePairingAround: Codable, Sendable, Equatable {
    /// Paired before the step: whether the device would allow it unpaired cannot be told.
    public var before: Bool
    /// Paired after it.
    public var after: Bool

    /// The pairing state around one step.
    public init(before: Bool, after: Bool) {
        self.before = before
        self.after = after
    }
}

/// The link dropping under the probe (bluetoothd reported `Connected` false before the probe disconnected), and how
/// far the probe had got.
public struct ProbeLinkLoss: Codable, Sendable, Equatable {
    /// What the probe was doing when the link dropped.
    public enum Phase: String, Codable, Sendable {
        /// Reading characteristics and descriptors: the reads after the drop were not tried.
        case reading
        /// Listening for notifications: the recording ends early.
        case listening
        /// Writing (`blemu verify --writes`): the writes after the drop, restores included, were not made.
        case writing
    }

    /// What the probe was doing.
    public var phase: Phase
    /// Reads answered before the link dropped (with a value or an error).
    public var readsDone: Int
    /// Reads not tried because the link was gone.
    public var readsSkipped: Int

    /// A link loss from its parts.
    public init(phase: Phase, readsDone: Int, readsSkipped: Int) {
        self.phase = phase
        self.readsDone = readsDone
        self.readsSkipped = readsSkipped
    }

    /// One clause for messages: "while reading, after 3 reads (4 not tried)".
    public var summary: String {
        switch phase {
        case .reading: "while reading, after \(readsDone) reads (\(readsSkipped) not tried)"
        case .listening: "while listening for notifications, after all \(readsDone) reads"
        case .writing: "while writing, after all \(readsDone) reads and the listening"
        }
    }
}

/// The peripheral as bluetoothd's Device1 describes it.
public struct ProbeDevice: Codable, Sendable, Equatable {
    /// bluetoothd's object path: "/org/bluez/hci1/dev_00_AA_01_00_00_00".
    public var path: String
    /// "00:AA:01:00:00:00".
    public var address: String
    /// "public" or "random"; nil when bluetoothd did not say.
    public var addressType: String?
    /// The advertised (or GAP) name; nil when none was seen.
    public var name: String?
    /// The last RSSI in dBm; nil when the device was not seen in this discovery (e.g. already connected).
    public var rssi: Int?
    /// Service UUIDs from the advertisement (and, once resolved, the GATT database), short form: "180D".
    public var uuids: [String]
    /// Manufacturer data as advertised, hex by company identifier ("006B": "0200"); nil when none was seen.
    public var manufacturerData: [String: String]?
    /// Service data as advertised, hex by service UUID ("180F": "57"); nil when none was seen.
    public var serviceData: [String: String]?
    /// The advertised Appearance; nil when none was seen.
    public var appearance: Int?
    /// The advertised TX power level in dBm; nil when none was seen.
    public var txPower: Int?

    /// A device from its properties.
    public init(
        path: String, address: String, addressType: String?, name: String?, rssi: Int?, uuids: [String],
        manufacturerData: [String: String]? = nil, serviceData: [String: String]? = nil, appearance: Int? = nil,
        txPower: Int? = nil
    ) {
        self.path = path
        self.address = address
        self.addressType = addressType
        self.name = name
        self.rssi = rssi
        self.uuids = uuids
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.appearance = appearance
        self.txPower = txPower
    }
}

/// One remote service.
public struct ProbeService: Codable, Sendable, Equatable {
    /// Short form where the UUID has one: "180D".
    public var uuid: String
    /// The SIG name, nil for a custom UUID.
    public var name: String?
    /// Whether bluetoothd reports it as primary.
    public var isPrimary: Bool
    /// Its object path; the handle is in the last element ("service000c").
    public var path: String
    /// Its characteristics in handle order.
    public var characteristics: [ProbeCharacteristic]

    /// A service from its parts.
    public init(uuid: String, name: String?, isPrimary: Bool, path: String, characteristics: [ProbeCharacteristic]) {
        self.uuid = uuid
        self.name = name
        self.isPrimary = isPrimary
        self.path = path
        self.characteristics = characteristics
    }

    enum CodingKeys: String, CodingKey {
        case uuid, name, isPrimary = "primary", path, characteristics
    }
}

/// One remote characteristic with what reading and subscribing gave.
public struct ProbeCharacteristic: Codable, Sendable, Equatable {
    /// Short form where the UUID has one: "2A37".
    public var uuid: String
    /// The SIG name, nil for a custom UUID.
    public var name: String?
    /// The `Flags` bluetoothd reports, in its order: ["read", "notify"].
    public var flags: [String]
    /// Its object path.
    public var path: String
    /// The value read, nil when not readable.
    public var read: ProbeRead?
    /// Notifications or indications received while listening, in arrival order.
    public var notifications: [ProbeValue]
    /// Why subscribing failed, nil when it worked or was not tried.
    public var subscribeError: ProbeFailure?
    /// The pairing state around StartNotify, nil when it was not tried (or in reports of earlier blemu versions).
    public var subscribePairing: ProbePairingAround?
    /// Its descriptors in handle order.
    public var descriptors: [ProbeDescriptor]

    /// A characteristic from its parts.
    public init(
        uuid: String, name: String?, flags: [String], path: String, read: ProbeRead?, notifications: [ProbeValue],
        subscribeError: ProbeFailure? = nil, descriptors: [ProbeDescriptor]
    ) {
        self.uuid = uuid
        self.name = name
        self.flags = flags
        self.path = path
        self.read = read
        self.notifications = notifications
        self.subscribeError = subscribeError
        self.descriptors = descriptors
    }

    /// Whether the flags allow subscribing (notify or indicate).
    public var canSubscribe: Bool {
        flags.contains { $0.hasSuffix(BlueZFlag.notify.rawValue) || $0.hasSuffix(BlueZFlag.indicate.rawValue) }
    }

    /// Whether the flags allow reading (`read` or a `*-read` security variant).
    public var canRead: Bool { flags.contains { $0.hasSuffix(BlueZFlag.read.rawValue) } }
}

/// One remote descriptor and its read.
public struct ProbeDescriptor: Codable, Sendable, Equatable {
    /// Short form: "2902".
    public var uuid: String
    /// The SIG name, nil for a custom UUID.
    public var name: String?
    /// Its object path.
    public var path: String
    /// The read's outcome (bluetoothd 5.66 does not expose descriptor flags, so every descriptor is read).
    public var read: ProbeRead?

    /// A descriptor from its parts.
    public init(uuid: String, name: String?, path: String, read: ProbeRead?) {
        self.uuid = uuid
        self.name = name
        self.path = path
        self.read = read
    }
}

/// The outcome of one ReadValue: a value or an error, never both.
public enum ProbeRead: Codable, Sendable, Equatable {
    /// The read answered with this value.
    case value(ProbeValue)
    /// The read failed; bluetoothd's error.
    case failure(ProbeFailure)

    private enum CodingKeys: String, CodingKey { case value, error }

    /// Decodes `{"value": ...}` or `{"error": ...}`; throws `DecodingError` when neither is present.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let value = try container.decodeIfPresent(ProbeValue.self, forKey: .value) {
            self = .value(value)
        } else {
            self = .failure(try container.decode(ProbeFailure.self, forKey: .error))
        }
    }

    /// Encodes as `{"value": ...}` or `{"error": ...}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .value(let value): try container.encode(value, forKey: .value)
        case .failure(let failure): try container.encode(failure, forKey: .error)
        }
    }

    /// The value, nil for a failure.
    public var value: ProbeValue? { if case .value(let value) = self { value } else { nil } }
    /// The failure, nil for a value.
    public var failure: ProbeFailure? { if case .failure(let failure) = self { failure } else { nil } }
}

/// A value as bytes, and what the probe could make of it.
public struct ProbeValue: Codable, Sendable, Equatable {
    /// Uppercase hex, no spaces: "0648".
    public var hex: String
    /// The SIG decoding ("72 bpm, contact detected") or UTF-8 text; nil when neither applies.
    public var decoded: String?
    /// Seconds since the listening window opened; nil for reads.
    public var at: Double?

    /// A value from its bytes, decoded as `uuid`'s format when the probe knows it.
    public init(bytes: [UInt8], uuid: String, at: Double? = nil) {
        hex = bytes.map { Hex.byte($0) }.joined()
        decoded = ValueDecoder.describe(bytes, uuid: uuid)
        self.at = at
    }
}

/// An error bluetoothd answered a client call with, and the ATT error behind it when it can be told.
public struct ProbeFailure: Codable, Sendable, Equatable {
    /// The D-Bus error name: "org.bluez.Error.NotPermitted".
    public var name: String
    /// bluetoothd's message: "Read not permitted".
    public var message: String
    /// The ATT error code, when the name and message identify one (see `ATTErrorCode.parse`).
    public var attError: UInt8?

    /// A failure from a D-Bus error name and message; the ATT code is parsed from them.
    public init(name: String, message: String) {
        self.name = name
        self.message = message
        attError = ATTErrorCode.parse(name: name, message: message)
    }
}

/// Seconds from the probe's start.
public struct ProbeTimings: Codable, Sendable, Equatable {
    /// Until the device was seen.
    public var found: Double
    /// Until Connect answered.
    public var connected: Double
    /// Until ServicesResolved was true.
    public var resolved: Double
    /// Until the report was complete (after the disconnect).
    public var total: Double

    /// Timings from their parts.
    public init(found: Double, connected: Double, resolved: Double, total: Double) {
        self.found = found
        self.connected = connected
        self.resolved = resolved
        self.total = total
    }
}
