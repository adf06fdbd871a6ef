import BlueZModel
import DBus

extension BlueZName {
    /// `rootPath` as an object path: where bluetoothd's ObjectManager answers `GetManagedObjects`.
    static let root = ObjectPath(stringLiteral: rootPath)
    /// `agentManagerPath` as an object path: where `AgentManager1` lives.
    static let agentManager = ObjectPath(stringLiteral: agentManagerPath)
}
