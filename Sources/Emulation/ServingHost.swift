/// Where a device is served, for the control socket's `status`: the adapter, and how to learn bluetoothd's version.
/// `blemu run` gives it; a test's emulator has none, and `status` then says so.
public struct ServingHost: Sendable {
    /// The adapter's name, "hci0".
    public var adapter: String
    /// bluetoothd's version ("5.82"), nil when it cannot be told. Asked once, at the first `status`, so starting a
    /// device costs no extra process (the version comes from running bluetoothd --version).
    public var bluezVersion: @Sendable () async -> String?

    /// A host serving on `adapter`, its bluetoothd's version from `bluezVersion`.
    public init(adapter: String, bluezVersion: @escaping @Sendable () async -> String?) {
        self.adapter = adapter
        self.bluezVersion = bluezVersion
    }
}
