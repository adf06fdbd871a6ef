import GATTModel

/// How the BlueZ backend presents the machine; all fields have defaults, none can fail.
public struct BlueZOptions: Sendable {
    /// The pairing agent's IO capability and fixed passkey.
    public var pairing: PairingSettings
    /// The adapter `Alias` to set while running (bluetoothd's GAP Device Name), restored on shutdown; nil leaves it.
    public var deviceName: String?
    /// Which `ObjectPaths` instance to export under, so several backends can share a process.
    public var instance: Int
    /// Whether characteristics that notify or indicate offer `AcquireNotify` (exposing `NotifyAcquired`);
    /// false keeps to `StartNotify` + `PropertiesChanged`.
    public var useAcquireNotify: Bool
    /// Whether write-without-response characteristics offer `AcquireWrite` (exposing `WriteAcquired`), so
    /// bluetoothd streams their writes through a socket instead of one `WriteValue` call each. Off by default:
    /// 5.66 calls it once per characteristic and sends every central's writes down the same socket, so those
    /// writes can no longer be told apart by central (they arrive from `Central.allSubscribersID`), and writes
    /// that reach bluetoothd while its AcquireWrite call is pending are delivered corrupted (docs/bluez.md).
    public var useAcquireWrite: Bool

    /// Options from their parts; the defaults are Just Works pairing, no alias change, instance 0, AcquireNotify
    /// on, AcquireWrite off.
    public init(
        pairing: PairingSettings = PairingSettings(), deviceName: String? = nil, instance: Int = 0,
        useAcquireNotify: Bool = true, useAcquireWrite: Bool = false
    ) {
        self.pairing = pairing
        self.deviceName = deviceName
        self.instance = instance
        self.useAcquireNotify = useAcquireNotify
        self.useAcquireWrite = useAcquireWrite
    }
}
