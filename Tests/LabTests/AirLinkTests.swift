import Foundation
import Testing

@testable import Lab

/// The parts of airs on several machines that need no VM (docs/lab.md, "Airs on several machines"): the endpoints
/// users type, the splice that carries a link across the namespace's edge, and what the air asks RootCanal.
struct AirLinkTests {
    @Test func endpointsAreHostColonPortWithBracketsForIPv6() throws {
        let v4 = try #require(TCPEndpoint("10.77.0.1:7404"))
        #expect(v4.host == "10.77.0.1" && v4.port == 7404 && v4.description == "10.77.0.1:7404")
        let named = try #require(TCPEndpoint("lab-b.example:7404"))
        #expect(named.host == "lab-b.example")
        let v6 = try #require(TCPEndpoint("[fd00::2]:7404"))
        #expect(v6.host == "fd00::2" && v6.description == "[fd00::2]:7404")
        for bad in ["10.77.0.1", ":7404", "10.77.0.1:0", "10.77.0.1:65536", "fd00::2:7404", "[fd00::2]7404", "h:x"] {
            #expect(TCPEndpoint(bad) == nil, "\(bad)")
        }
    }

    @Test func aPortInUseIsRefusedWithItsReason() throws {
        let endpoint = try #require(TCPEndpoint("127.0.0.1:7479"))
        let first = try endpoint.listen()
        defer { close(first) }
        #expect(throws: TCPEndpoint.Failure.self) { _ = try endpoint.listen() }
        do {
            _ = try endpoint.listen()
        } catch {
            #expect(error.description == "cannot listen on 127.0.0.1:7479: Address already in use")
        }
    }

    private func directory() throws -> String { try SocketTestIO.scratchDirectory("blemu-splice") }

    /// Reads until `count` bytes came or 5 s passed.
    private func receive(_ fd: Int32, _ count: Int) -> [UInt8] {
        SocketTestIO.receive(fd) { $0.count >= count }
    }

    private func send(_ fd: Int32, _ text: String) { SocketTestIO.send(fd, text) }

    /// Collects the splice's log lines.
    final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [String] = []
        func append(_ line: String) { lock.withLock { stored.append(line) } }
        var all: [String] { lock.withLock { stored } }
    }

    @Test func aConnectionWaitsForItsOtherEndThenCarriesBytesBothWays() throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let entrance = directory + "/in.sock"
        let far = directory + "/far.sock"
        let lines = Lines()
        let splice = try SocketSplice(
            entrances: [
                .init(
                    name: "in", source: .listener(try UnixSocket.listen(entrance)),
                    dial: { () throws(TCPEndpoint.Failure) in try UnixSocket.connect(far) }, patience: .seconds(10))
            ], log: { lines.append($0) })
        try splice.start()
        // The near end connects and writes before the far end exists: the splice keeps trying, the bytes wait.
        let near = try UnixSocket.connect(entrance)
        defer { close(near) }
        send(near, "advertisement")
        Thread.sleep(forTimeInterval: 0.7)
        let farListener = try UnixSocket.listen(far)
        defer { close(farListener) }
        var fds = [pollfd(fd: farListener, events: Int16(POLLIN), revents: 0)]
        #expect(poll(&fds, 1, 5000) == 1, "the splice dialled the far end once it existed")
        let farEnd = accept(farListener, nil, nil)
        #expect(String(decoding: receive(farEnd, 13), as: UTF8.self) == "advertisement")
        send(farEnd, "scan")
        #expect(String(decoding: receive(near, 4), as: UTF8.self) == "scan")
        close(farEnd)
        let deadline = ContinuousClock.now + .seconds(5)
        while !lines.all.contains(where: { $0.contains("closed") }) && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        splice.stop()
        #expect(lines.all == ["in: connected", "in: closed after 13 bytes in, 4 out"])
    }

    @Test func aConnectionWhoseOtherEndNeverComesIsGivenUp() throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lines = Lines()
        let splice = try SocketSplice(
            entrances: [
                .init(
                    name: "out",
                    source: .connect({ () throws(TCPEndpoint.Failure) in try UnixSocket.connect(directory + "/a") }),
                    dial: { () throws(TCPEndpoint.Failure) in try UnixSocket.connect(directory + "/b") },
                    patience: .milliseconds(600))
            ], log: { lines.append($0) })
        try splice.start()
        let deadline = ContinuousClock.now + .seconds(5)
        while lines.all.isEmpty && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        splice.stop()
        #expect(
            lines.all == ["out: gave up after 0.6 seconds: cannot connect to \(directory)/a: No such file or directory"]
        )
    }

    @Test func theAirFindsItsControllersInRootCanalsListAndAddressesThemByItsByte() {
        // RootCanal's `list` answer with a link from another air among the devices (model/setup/test_model.cc).
        let list = """
             Devices: \r
              0:hci_device@da:4c:10:de:00:00 \r
              1:hci_device@da:4c:10:de:00:01 \r
              2:link_layer_socket_device@bb:bb:bb:bb:bb:ad \r
              3:hci_device@da:4c:10:de:00:02 \r
             Phys: \r
              0:BR_EDR: 0,1,3, \r
              1:LOW_ENERGY: 0,1,2,3, \r

            """
        #expect(RootCanalAir.controllerIdentifiers(inList: list) == [0, 1, 3])
        #expect(RootCanalAir.address(of: 0, airByte: 0xDE) == "DA:4C:10:DE:00:00")
        #expect(RootCanalAir.address(of: 257, airByte: 0x02) == "DA:4C:10:02:01:01")
        // The test channel's framing (model/setup/test_channel_transport.cc): lengths before name and arguments.
        #expect(
            RootCanalTestChannel.frame("list", []) == [4] + Array("list".utf8) + [0])
        #expect(
            RootCanalTestChannel.frame("set_device_address", ["3", "DA:4C:10:02:00:00"])
                == [18] + Array("set_device_address".utf8) + [2, 1, 0x33, 17] + Array("DA:4C:10:02:00:00".utf8))
    }
}
