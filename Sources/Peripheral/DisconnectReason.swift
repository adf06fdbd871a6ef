/// Why a central's link went down, in the stack's words.
///
/// BlueZ says it from 5.83 on, in the `Device1.Disconnected(reason, message)` signal it sends just before
/// `Connected` turns false (src/device.c `device_disconnected`, from the kernel's MGMT Device Disconnected reason);
/// earlier releases say nothing, and a disconnect then carries no reason.
public struct DisconnectReason: Hashable, Sendable, CustomStringConvertible {
    /// The stack's name for it: BlueZ's `org.bluez.Reason.Remote`, `.Local`, `.Timeout`, `.Authentication`,
    /// `.Suspend` or `.Unknown`.
    public let name: String
    /// The stack's sentence for it: "Connection terminated by remote user".
    public let message: String

    /// A reason as the stack gave it.
    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    /// The name's last part: "Remote", "Local", "Timeout", "Authentication", "Suspend", "Unknown".
    public var code: String { String(name.split(separator: ".").last ?? Substring(name)) }

    /// "Remote (Connection terminated by remote user)".
    public var description: String { "\(code) (\(message))" }
}
