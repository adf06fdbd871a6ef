import GATTModel

/// What to probe and how long to try: the `blemu probe` command line as a value.
public struct ProbeRequest: Sendable, Equatable {
    /// The adapter to use ("hci1"); nil picks the first adapter that is not advertising.
    public var adapter: String?
    /// The device's address ("00:AA:01:00:00:00", any case); nil to match by name or service only.
    public var address: String?
    /// The advertised name (`Name` or `Alias`) to match exactly.
    public var name: String?
    /// An advertised service UUID to match ("180D" or the full form).
    public var service: String?
    /// How long to wait for each of: the device to show up, Connect, and ServicesResolved.
    public var timeout: Duration
    /// How long to collect notifications after subscribing.
    public var listen: Duration
    /// Pair before reading (`Device1.Pair`, which connects), answering bluetoothd through blemu's pairing agent
    /// with these settings; nil connects without pairing.
    public var pairing: PairingSettings?
    /// Whether the device's advertised name matters (verify checks it): found without one, the probe scans again,
    /// for at most `BlueZCentral.nameWait`, until the scan response that carries it arrives.
    public var waitsForName: Bool

    /// A request; at least one of address, name and service should be set, else the first LE device seen matches.
    public init(
        adapter: String? = nil, address: String? = nil, name: String? = nil, service: String? = nil,
        timeout: Duration = .seconds(20), listen: Duration = .seconds(3), pairing: PairingSettings? = nil,
        waitsForName: Bool = false
    ) {
        self.adapter = adapter
        self.address = address
        self.name = name
        self.service = service
        self.timeout = timeout
        self.listen = listen
        self.pairing = pairing
        self.waitsForName = waitsForName
    }

    /// A description of the target for messages: `00:AA:01:00:00:00 named "x" advertising 180D`.
    public var targetDescription: String {
        var parts: [String] = []
        if let address { parts.append(address.uppercased()) }
        if let name { parts.append("named \"\(name)\"") }
        if let service { parts.append("advertising \(service)") }
        return parts.isEmpty ? "any LE device" : parts.joined(separator: " ")
    }
}
