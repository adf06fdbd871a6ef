/// One exported D-Bus interface: its name, methods, properties and the signals it declares (for introspection).
public struct Interface: Sendable {
    /// The interface name, e.g. `org.bluez.GattCharacteristic1`; checked by `BusConnection.export`.
    public var name: String
    /// The methods, dispatched by member name.
    public var methods: [Method]
    /// The properties served by `org.freedesktop.DBus.Properties` and `GetManagedObjects`.
    public var properties: [Property]
    /// The signals this interface may emit (introspection only; emitting is `BusConnection.emitSignal`).
    public var signals: [SignalDescription]

    /// Describes an interface; names and signatures are checked when it is exported.
    public init(
        _ name: String, methods: [Method] = [], properties: [Property] = [], signals: [SignalDescription] = []
    ) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }
}

/// One method of an exported interface and the code that answers it.
public struct Method: Sendable {
    /// How a method's calls reach its code.
    public enum Handler: Sendable {
        /// Runs on the connection's loop thread, in arrival order: must return quickly and never block (it may
        /// keep the call and answer later from anywhere). The fastest path.
        case immediate(@Sendable (consuming MethodCall) -> Void)
        /// Runs in a new unstructured `Task`, so it may await (even calls back to the caller) before answering.
        case task(@Sendable (consuming MethodCall) async -> Void)
    }

    /// How a call's arguments reach the handler.
    public enum Decoding: Sendable {
        /// Decoded into `MethodCall.arguments` before the handler runs.
        case values
        /// Left in the message: `MethodCall.arguments` is empty and the handler reads what it needs with
        /// `MethodCall.readArguments`, without a `DBusValue` for each (a hot path's few options).
        case inPlace
    }

    /// The member name, e.g. `ReadValue`.
    public var name: String
    /// The input signature; a call with any other signature is answered `InvalidArgs` before the handler runs.
    public var inputs: Signature
    /// The output signature; a reply with any other signature is replaced by a `Failed` error (and logged).
    public var outputs: Signature
    /// The code that answers.
    public var handler: Handler
    /// Whether the arguments are decoded for the handler or read by it in place.
    public var decoding: Decoding

    /// A method answered on the loop thread; `body` must not block.
    public init(
        _ name: String, inputs: Signature = "", outputs: Signature = "", decoding: Decoding = .values,
        immediate body: @escaping @Sendable (consuming MethodCall) -> Void
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.decoding = decoding
        handler = .immediate(body)
    }

    /// A method answered from a task; `body` may await before answering (or dropping, which answers `Failed`).
    public init(
        _ name: String, inputs: Signature = "", outputs: Signature = "", decoding: Decoding = .values,
        task body: @escaping @Sendable (consuming MethodCall) async -> Void
    ) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
        self.decoding = decoding
        handler = .task(body)
    }

    /// A method written as `async throws -> [DBusValue]`: its result is the reply; a thrown `DBusError` is sent
    /// under its own name, any other error as `Failed` with its description.
    public static func returning(
        _ name: String, inputs: Signature = "", outputs: Signature = "",
        _ body: @escaping @Sendable (_ arguments: [DBusValue], _ context: CallContext) async throws -> [DBusValue]
    ) -> Method {
        Method(name, inputs: inputs, outputs: outputs) { (call: consuming MethodCall) async in
            let result: Result<[DBusValue], any Error>
            do { result = .success(try await body(call.arguments, call.context)) } catch { result = .failure(error) }
            switch result {
            case .success(let values): call.reply(values)
            case .failure(let error): call.fail(error)
            }
        }
    }
}

/// One property of an exported interface.
public struct Property: Sendable {
    /// The property name, e.g. `Value`.
    public var name: String
    /// The property's type; a getter returning another type makes Get fail with `Failed` (and is logged).
    public var signature: Signature
    /// Reads the current value, on the loop thread (so must not block); a thrown `DBusError` is sent as is.
    public var get: @Sendable () throws -> DBusValue
    /// Writes a value already checked against `signature`, on the loop thread; nil makes the property read-only
    /// (`PropertyReadOnly`). A thrown `DBusError` is sent as is, anything else as `Failed`.
    public var set: (@Sendable (DBusValue) throws -> Void)?
    /// Whether a successful Set emits `PropertiesChanged` with the new value (as read back through `get`).
    public var emitsChangedOnSet: Bool

    /// Describes a property; the name and signature are checked when it is exported.
    public init(
        _ name: String, signature: Signature, emitsChangedOnSet: Bool = true,
        get: @escaping @Sendable () throws -> DBusValue, set: (@Sendable (DBusValue) throws -> Void)? = nil
    ) {
        self.name = name
        self.signature = signature
        self.get = get
        self.set = set
        self.emitsChangedOnSet = emitsChangedOnSet
    }
}

/// A signal an interface declares, for introspection.
public struct SignalDescription: Sendable {
    /// The member name.
    public var name: String
    /// The argument signature.
    public var signature: Signature
    /// Describes a signal; checked when exported.
    public init(_ name: String, signature: Signature = "") {
        self.name = name
        self.signature = signature
    }
}

/// Who called and where: the copyable part of a `MethodCall`, for code that must not hold the call itself.
public struct CallContext: Sendable {
    /// The caller's unique bus name (e.g. `:1.42`), nil only on a peer-to-peer connection.
    public var sender: String?
    /// The object the call was addressed to.
    public var path: ObjectPath
    /// The interface named in the call (nil if the caller named none).
    public var interface: String?
    /// The method name.
    public var member: String
}
