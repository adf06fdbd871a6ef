// The fake's AgentManager1: what bluetoothd 5.66 accepts and refuses when an app registers its pairing agent
// (src/agent.c `register_agent`, `unregister_agent`, `request_default`, `parse_io_capability`). A test reads the
// agent from `registeredAgent` and plays pairing by calling its `org.bluez.Agent1` methods with `callApp`.
import DBus

extension FakeBluetoothd {
    /// The capabilities src/agent.c `parse_io_capability` accepts ("" means KeyboardDisplay).
    static let agentCapabilities: Set<String> = [
        "", "DisplayOnly", "DisplayYesNo", "KeyboardOnly", "NoInputNoOutput", "KeyboardDisplay",
    ]

    /// The registered agent: owner, path and capability.
    public var registeredAgent: (owner: String, path: ObjectPath, capability: String)? { agent }
    /// The agent made default by RequestDefaultAgent.
    public var defaultAgentPath: ObjectPath? { defaultAgent }

    private func registerAgent(owner: String, path: ObjectPath, capability: String) throws {
        guard agent?.owner != owner else {
            throw DBusError(name: BlueZ566.Error.alreadyExists, message: "Already Exists")
        }
        guard Self.agentCapabilities.contains(capability) else {
            throw DBusError(name: BlueZ566.Error.invalidArguments, message: "Invalid arguments in method call")
        }
        agent = (owner, path, capability)
    }

    private func unregisterAgent(owner: String?, path: ObjectPath) throws {
        guard let current = agent, current.owner == owner, current.path == path else {
            throw DBusError(name: BlueZ566.Error.doesNotExist, message: "No such Agent")
        }
        agent = nil
        if defaultAgent == path { defaultAgent = nil }
    }

    private func requestDefaultAgent(owner: String?, path: ObjectPath) throws {
        guard let current = agent, current.owner == owner, current.path == path else {
            throw DBusError(name: BlueZ566.Error.doesNotExist, message: "No such Agent")
        }
        defaultAgent = path
    }

    func agentManagerInterface() -> Interface {
        Interface(
            BlueZ566.Interface.agentManager,
            methods: [
                .returning("RegisterAgent", inputs: "os") { [weak self] arguments, context in
                    guard let self, let sender = context.sender, arguments.count == 2,
                        case .objectPath(let path) = arguments[0], case .string(let capability) = arguments[1]
                    else { throw DBusError(name: BlueZ566.Error.invalidArguments, message: "Invalid arguments") }
                    try await self.registerAgent(owner: sender, path: path, capability: capability)
                    return []
                },
                .returning("UnregisterAgent", inputs: "o") { [weak self] arguments, context in
                    guard let self, case .objectPath(let path)? = arguments.first else {
                        throw DBusError(name: BlueZ566.Error.invalidArguments, message: "Invalid arguments")
                    }
                    try await self.unregisterAgent(owner: context.sender, path: path)
                    return []
                },
                .returning("RequestDefaultAgent", inputs: "o") { [weak self] arguments, context in
                    guard let self, case .objectPath(let path)? = arguments.first else {
                        throw DBusError(name: BlueZ566.Error.invalidArguments, message: "Invalid arguments")
                    }
                    try await self.requestDefaultAgent(owner: context.sender, path: path)
                    return []
                },
            ])
    }
}
