/// Whether the peripheral can be used: Core Bluetooth's `CBManagerState`.
public enum PeripheralManagerState: String, Hashable, Sendable, CaseIterable {
    /// Not known yet: wait for the first state change before publishing.
    case unknown
    /// The stack is restarting (bluetoothd went away): registrations will be redone.
    case resetting
    /// No LE adapter (or it cannot act as a peripheral).
    case unsupported
    /// The process may not use Bluetooth (D-Bus policy denies it).
    case unauthorized
    /// The adapter is off.
    case poweredOff
    /// Ready: services can be published and advertised.
    case poweredOn
}
