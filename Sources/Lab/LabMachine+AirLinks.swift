import FoundationEssentials

extension LabMachine {
    /// The path in the results directory where the air takes links (`RootCanalAir.Plan.Links.socket`).
    static let airLinkSocket = "air-link.sock"

    /// The air's side of its links with airs elsewhere, or nil when the run has none: its controllers' address byte
    /// (DA:4C:10:DE for an air that only listens, a random other byte for one that links out, so two airs that
    /// meet do not share addresses) and its socket.
    func airLinksPlan() -> RootCanalAir.Plan.Links? {
        guard configuration.airListen != nil || !configuration.airLinks.isEmpty else { return nil }
        let byte = configuration.airLinks.isEmpty ? 0xDE : UInt8.random(in: 0x01...0xFE).nonDefault
        return .init(addressByte: byte, socket: configuration.resultsDirectory + "/" + Self.airLinkSocket)
    }

    /// The host's side of `links`, started: the `airListen` port joined to the air's socket for each air
    /// that connects, and a connection to each of `airLinks`, made again whenever it closes, joined the same way.
    /// Throws `LabError.io` when the port cannot be had (in use, or an address this host does not have).
    func startAirLinks(
        _ links: RootCanalAir.Plan.Links, log: @escaping @Sendable (String) -> Void
    ) throws -> SocketSplice {
        let socket = links.socket
        let toAir: @Sendable () throws(TCPEndpoint.Failure) -> Int32 = { () throws(TCPEndpoint.Failure) in
            try UnixSocket.connect(socket)
        }
        var entrances: [SocketSplice.Entrance] = []
        if let listen = configuration.airListen {
            do {
                // The air makes its socket a few seconds after it starts.
                entrances.append(
                    .init(
                        name: "a link from \(listen)", source: .listener(try listen.listen()), dial: toAir,
                        patience: .seconds(120)))
            } catch {
                throw LabError.io("--air-listen: \(error.description)")
            }
        }
        for remote in configuration.airLinks {
            // The other lab may boot after this one: its port is tried for as long as this run may last.
            entrances.append(
                .init(
                    name: "the link to \(remote)",
                    source: .connect({ () throws(TCPEndpoint.Failure) in try remote.connect() }), dial: toAir,
                    patience: configuration.timeout))
        }
        let splice: SocketSplice
        do {
            splice = try SocketSplice(entrances: entrances, log: log)
            try splice.start()
        } catch {
            throw LabError.io(error.description)
        }
        return splice
    }
}

extension UInt8 {
    /// Itself, or 0xDD in place of 0xDE, the byte of an air that only listens.
    fileprivate var nonDefault: UInt8 { self == 0xDE ? 0xDD : self }
}
