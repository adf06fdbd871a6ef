// How bluetoothd 5.66 turns an app's GetManagedObjects reply into attributes (src/gatt-database.c
// `client_ready_cb`, `register_service`/`register_characteristic`/`register_descriptor`, `parse_uuid`,
// `database_add_chrc`, `database_add_ccc`, `database_add_cep`). A test reads the result to see what the app
// registered: `FakeBluetoothd.registeredApplications`, `FakeBluetoothd.characteristic(_:)`.
import DBus
import GATTModel

/// Every org.bluez string the fake uses, spelled once (BlueZ 5.66 doc/*-api.txt).
enum BlueZ566 {
    static let service = "org.bluez"
    static let managerPath: ObjectPath = "/org/bluez"
    static let adapterPath: ObjectPath = "/org/bluez/hci0"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let properties = "org.freedesktop.DBus.Properties"

    enum Interface {
        static let adapter = "org.bluez.Adapter1"
        static let device = "org.bluez.Device1"
        static let agentManager = "org.bluez.AgentManager1"
        static let gattManager = "org.bluez.GattManager1"
        static let gattService = "org.bluez.GattService1"
        static let gattCharacteristic = "org.bluez.GattCharacteristic1"
        static let gattDescriptor = "org.bluez.GattDescriptor1"
        static let advertisingManager = "org.bluez.LEAdvertisingManager1"
        static let advertisement = "org.bluez.LEAdvertisement1"
    }

    /// src/error.c names.
    enum Error {
        static let failed = "org.bluez.Error.Failed"
        static let alreadyExists = "org.bluez.Error.AlreadyExists"
        static let doesNotExist = "org.bluez.Error.DoesNotExist"
        static let invalidArguments = "org.bluez.Error.InvalidArguments"
        static let notPermitted = "org.bluez.Error.NotPermitted"
    }
}

/// One attribute of the fake's database, in handle order.
public struct FakeAttribute: Sendable, Hashable {
    /// What an attribute is: the app's service, characteristic (declaration and value) or descriptor, or one that
    /// bluetoothd adds itself.
    public enum Role: Sendable, Hashable {
        /// A service declaration.
        case service
        /// A characteristic declaration and its value (two handles).
        case characteristic
        /// The Client Characteristic Configuration descriptor bluetoothd adds to a notifying characteristic.
        case cccd
        /// The Characteristic Extended Properties descriptor bluetoothd adds.
        case extendedProperties
        /// A descriptor of the app's.
        case descriptor
    }
    /// Its handle (the declaration's, for a characteristic).
    public var handle: UInt16
    /// What it is.
    public var role: Role
    /// Its type.
    public var uuid: BluetoothUUID
    /// The app object behind it; nil for the CCCD and Extended Properties that bluetoothd itself creates.
    public var path: ObjectPath?
}

/// A descriptor as registered.
public struct FakeDescriptor: Sendable {
    /// The app's GattDescriptor1 object.
    public var path: ObjectPath
    /// Its `UUID`.
    public var uuid: BluetoothUUID
    /// Its `Flags`, exactly as declared.
    public var flags: [String]
    /// What bluetoothd makes of the flags.
    public var parsed: FakeATT.ParsedFlags
}

/// A characteristic as registered, with the flags exactly as declared.
public struct FakeCharacteristic: Sendable {
    /// The app's GattCharacteristic1 object.
    public var path: ObjectPath
    /// Its `UUID`.
    public var uuid: BluetoothUUID
    /// Its `Flags`, exactly as declared.
    public var flags: [String]
    /// What bluetoothd makes of the flags.
    public var parsed: FakeATT.ParsedFlags
    /// The object exposes `NotifyAcquired` (any value): 5.66 then tries AcquireNotify first.
    public var offersAcquireNotify: Bool
    /// The object exposes `WriteAcquired` (any value): 5.66 then streams every write through AcquireWrite.
    public var offersAcquireWrite = false
    /// Its descriptors, as the app declared them (not the CCCD and Extended Properties bluetoothd adds).
    public var descriptors: [FakeDescriptor] = []
    /// Whether bluetoothd gives it a CCCD: it has `notify` or `indicate` (or a security variant of either).
    public var hasCCCD: Bool { !parsed.properties.isDisjoint(with: [.notify, .indicate]) }
}

/// A service as registered.
public struct FakeService: Sendable {
    /// The app's GattService1 object.
    public var path: ObjectPath
    /// Its `UUID`.
    public var uuid: BluetoothUUID
    /// Its `Primary`.
    public var isPrimary: Bool
    /// Its characteristics, in the order GetManagedObjects listed them.
    public var characteristics: [FakeCharacteristic] = []
}

/// A registered application: its owner's unique name, root, and the attribute table built from it.
public struct FakeApplication: Sendable {
    /// The unique bus name of the connection that registered it.
    public var owner: String
    /// The object path passed to RegisterApplication.
    public var root: ObjectPath
    /// Its services, in the order GetManagedObjects listed them.
    public var services: [FakeService]
    /// The attribute table bluetoothd built from it, in handle order.
    public var attributes: [FakeAttribute]

    /// Every characteristic of every service.
    public var characteristics: [FakeCharacteristic] { services.flatMap(\.characteristics) }
}

/// Why a registration failed, as the fake records it (bluetoothd only logs these and replies Failed).
struct RegistrationFailure: Error, Sendable, CustomStringConvertible {
    var description: String
}

extension FakeApplication {
    /// Builds the table from a GetManagedObjects reply as 5.66 would, or throws why 5.66 would fail it.
    /// Stricter than 5.66 in one place: an app-declared CCCD (0x2902) or Extended Properties (0x2900) descriptor
    /// fails here, while 5.66 accepts it and publishes a duplicate next to its own.
    init(owner: String, root: ObjectPath, managedObjects reply: [DBusValue], firstHandle: UInt16) throws {
        self.owner = owner
        self.root = root
        guard let objects = try? reply.first?.asEntries(), !objects.isEmpty else {
            throw RegistrationFailure(description: "No object received")
        }
        var services: [FakeService] = []
        var characteristics: [(service: ObjectPath, FakeCharacteristic)] = []
        var descriptors: [(characteristic: ObjectPath, FakeDescriptor)] = []
        for object in objects {
            guard case .objectPath(let path) = object.key, let interfaces = try? object.value.asEntries() else {
                continue
            }
            for entry in interfaces {
                guard case .string(let interface) = entry.key,
                    let properties = try? entry.value.asVardict()
                else { continue }
                switch interface {
                case BlueZ566.Interface.gattService:
                    let uuid = try Self.uuid(properties, at: path)
                    let isPrimary = (try? properties["Primary"]?.asBool()) ?? false
                    services.append(FakeService(path: path, uuid: uuid, isPrimary: isPrimary))
                case BlueZ566.Interface.gattCharacteristic:
                    let uuid = try Self.uuid(properties, at: path)
                    let flags = try Self.flags(properties, at: path)
                    guard let parsed = FakeATT.parseCharacteristicFlags(flags) else {
                        throw RegistrationFailure(description: "\(path): invalid characteristic flag in \(flags)")
                    }
                    guard let service = try? properties["Service"]?.asObjectPath() else {
                        throw RegistrationFailure(description: "\(path): no Service property")
                    }
                    let characteristic = FakeCharacteristic(
                        path: path, uuid: uuid, flags: flags, parsed: parsed,
                        offersAcquireNotify: properties["NotifyAcquired"] != nil,
                        offersAcquireWrite: properties["WriteAcquired"] != nil)
                    characteristics.append((service, characteristic))
                case BlueZ566.Interface.gattDescriptor:
                    let uuid = try Self.uuid(properties, at: path)
                    let flags = try Self.flags(properties, at: path)
                    guard let parsed = FakeATT.parseDescriptorFlags(flags) else {
                        throw RegistrationFailure(description: "\(path): invalid descriptor flag in \(flags)")
                    }
                    if uuid == BluetoothUUID(0x2902) || uuid == BluetoothUUID(0x2900) {
                        throw RegistrationFailure(
                            description: "\(path): \(uuid) is created by bluetoothd (5.66 would publish a duplicate)")
                    }
                    guard let owner = try? properties["Characteristic"]?.asObjectPath() else {
                        throw RegistrationFailure(description: "\(path): no Characteristic property")
                    }
                    descriptors.append((owner, FakeDescriptor(path: path, uuid: uuid, flags: flags, parsed: parsed)))
                default:
                    continue
                }
            }
        }
        for (owner, descriptor) in descriptors {
            guard let index = characteristics.firstIndex(where: { $0.1.path == owner }) else {
                throw RegistrationFailure(description: "\(descriptor.path): characteristic \(owner) not found")
            }
            characteristics[index].1.descriptors.append(descriptor)
        }
        for (owner, characteristic) in characteristics {
            // `check_service_path`: the Service property must name a registered service.
            guard let index = services.firstIndex(where: { $0.path == owner }) else {
                throw RegistrationFailure(description: "\(characteristic.path): service \(owner) not found")
            }
            services[index].characteristics.append(characteristic)
        }
        guard !services.isEmpty else { throw RegistrationFailure(description: "No valid service object found") }
        self.services = services
        attributes = Self.table(services, from: firstHandle)
    }

    /// `parse_uuid`: the UUID must parse and must not be GAP (0x1800) or GATT (0x1801), on any object.
    private static func uuid(_ properties: [String: DBusValue], at path: ObjectPath) throws -> BluetoothUUID {
        guard let text = try? properties["UUID"]?.asString(), let uuid = BluetoothUUID(text) else {
            throw RegistrationFailure(description: "\(path): missing or invalid UUID")
        }
        if uuid == BluetoothUUID(0x1800) || uuid == BluetoothUUID(0x1801) {
            throw RegistrationFailure(description: "\(path): \(uuid) is handled by bluetoothd")
        }
        return uuid
    }

    private static func flags(_ properties: [String: DBusValue], at path: ObjectPath) throws -> [String] {
        guard let flags = try? properties["Flags"]?.asStrings() else {
            throw RegistrationFailure(description: "\(path): missing Flags")
        }
        return flags
    }

    /// Handles in 5.66's order: service, then per characteristic its declaration+value, CCCD, CEP, descriptors.
    private static func table(_ services: [FakeService], from first: UInt16) -> [FakeAttribute] {
        var table: [FakeAttribute] = []
        var handle = first
        func add(_ role: FakeAttribute.Role, _ uuid: BluetoothUUID, _ path: ObjectPath?) {
            table.append(FakeAttribute(handle: handle, role: role, uuid: uuid, path: path))
            handle += role == .characteristic ? 2 : 1
        }
        for service in services {
            add(.service, service.uuid, service.path)
            for characteristic in service.characteristics {
                add(.characteristic, characteristic.uuid, characteristic.path)
                if characteristic.hasCCCD { add(.cccd, BluetoothUUID(0x2902), nil) }
                if characteristic.parsed.extendedProperties != 0 {
                    add(.extendedProperties, BluetoothUUID(0x2900), nil)
                }
                for descriptor in characteristic.descriptors { add(.descriptor, descriptor.uuid, descriptor.path) }
            }
        }
        return table
    }
}
