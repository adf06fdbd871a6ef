/// Why a probe could not finish; each case maps to one documented exit code of `blemu probe`.
public enum ProbeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bus could not be reached (the D-Bus error text).
    case busUnavailable(String)
    /// Nobody owns org.bluez: bluetoothd is not running.
    case bluetoothdNotRunning
    /// No adapter fits: none at all, the named one is missing, or every one is advertising.
    case noAdapter(String)
    /// The device was not seen before the timeout; `seen` describes the devices the adapter did see.
    case notFound(target: String, seconds: Int64, seen: [String])
    /// The device was seen but Connect or service resolution failed (bluetoothd's error, or a timeout).
    case connectFailed(String)
    /// The device was seen but `Device1.Pair` failed (bluetoothd's error, or a timeout).
    case pairingFailed(String)
    /// bluetoothd answered in a way the probe does not understand (a changed API, a bug).
    case unexpectedReply(String)

    /// The exit code `blemu probe` ends with: 69 unavailable, 1 not found, 2 connect or pairing failed, 70
    /// unexpected.
    public var exitCode: Int32 {
        switch self {
        case .busUnavailable, .bluetoothdNotRunning, .noAdapter: 69
        case .notFound: 1
        case .connectFailed, .pairingFailed: 2
        case .unexpectedReply: 70
        }
    }

    /// One line for stderr.
    public var description: String {
        switch self {
        case .busUnavailable(let text): "probe: cannot reach the bus: \(text)"
        case .bluetoothdNotRunning: "probe: bluetoothd is not running (nobody owns org.bluez on the bus)"
        case .noAdapter(let text): "probe: \(text)"
        case .notFound(let target, let seconds, let seen):
            "probe: \(target) not found within \(seconds) s; "
                + (seen.isEmpty ? "the adapter saw no LE device" : "the adapter saw \(seen.joined(separator: ", "))")
        case .connectFailed(let text): "probe: \(text)"
        case .pairingFailed(let text): "probe: pairing failed: \(text)"
        case .unexpectedReply(let text): "probe: unexpected reply from bluetoothd: \(text)"
        }
    }
}
