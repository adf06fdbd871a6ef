import Foundation
import Testing

@testable import Lab

/// The command's VM reaching a fleet VM's control sockets (docs/lab.md, "A fleet"): what `blemu lab bridge` takes on
/// its command line, the network qemu gives each VM, and the two bridges joined as the lab joins them, with sockets
/// on this machine standing in for the two VMs. FleetScenarioTests and SharedAirScenarioTests cross real VMs.
struct ControlBridgeTests {
    @Test func aJoinIsListenEqualsDialEachAUnixPathOrATCPAddress() throws {
        let fleet = try #require(ControlBridge.Join("tcp:10.0.2.15:7003=unix:/run/blemu/hci3.sock"))
        #expect(fleet.listen == .tcp(try #require(TCPEndpoint("10.0.2.15:7003"))))
        #expect(fleet.dial == .unix("/run/blemu/hci3.sock"))
        #expect(fleet.description == "tcp:10.0.2.15:7003=unix:/run/blemu/hci3.sock")
        let central = try #require(ControlBridge.Join("unix:/run/blemu/vm1/hci3.sock=tcp:10.0.2.2:7204"))
        #expect(central.listen == .unix("/run/blemu/vm1/hci3.sock"))
        for bad in [
            "", "unix:/a", "unix:/a=", "=unix:/a", "unix:=unix:/b", "tcp:10.0.2.2=unix:/a", "udp:1.2.3.4:5=unix:/a",
            "/a=/b",
        ] {
            #expect(ControlBridge.Join(bad) == nil, "\(bad)")
        }
    }

    @Test func aFleetVMsControllersAreForwardedFromTheAirsLoopbackByTheirPlace() {
        // vm2 of a fleet of 15 per VM: its controllers are places 16 and 17 on the air.
        let serving = ControlBridge.servingNetwork(firstController: 16, controllers: 2)
        #expect(
            serving == [
                "-nic",
                "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:7216-:7000,hostfwd=tcp:127.0.0.1:7217-:7001",
            ])
        var configuration = LabConfiguration(
            resultsDirectory: "/work/results/r1/vm2", controllers: 2, blemuExecutable: "/opt/blemu/bin/blemu")
        configuration.radio = .rootcanal
        var command = QEMUCommand(
            configuration: configuration, timeout: "/usr/bin/timeout", qemu: "/usr/bin/qemu-system-x86_64",
            kernel: "/boot/vmlinuz-x", initramfs: "/cache/i.cpio", script: "/work/results/r1/vm2/guest-stack.sh")
        #expect(command.arguments.contains("none"), "a VM alone has no network")
        command.network = serving
        #expect(!command.arguments.contains("none"))
        #expect(command.arguments.contains(serving[1]))
        // The relay's ports (6500 + place) stay below the bridge's for every fleet RootCanal can hold.
        #expect(Int(RootCanalAir.relayPort) + 500 < Int(ControlBridge.airPortBase))
    }

    private func directory() throws -> String { try SocketTestIO.scratchDirectory("blemu-bridge") }

    /// A line-at-a-time server on `path` that answers each line with "ok " and the line, as a control socket
    /// answers each request once; it serves connections one after another until `stop`.
    final class LineServer: @unchecked Sendable {
        private let listener: Int32
        private let stopped = NSLock()
        private var isStopped = false

        init(_ path: String) throws {
            listener = try UnixSocket.listen(path)
            Thread { [self] in serve() }.start()
        }

        func stop() {
            stopped.withLock { isStopped = true }
            shutdown(listener, Int32(SHUT_RDWR))
        }

        private func serve() {
            while !stopped.withLock({ isStopped }) {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { break }
                var pending: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 256)
                while true {
                    let count = recv(fd, &buffer, buffer.count, 0)
                    guard count > 0 else { break }
                    pending += buffer.prefix(count)
                    while let newline = pending.firstIndex(of: 10) {
                        let answer = Array("ok ".utf8) + pending[...newline]
                        pending.removeSubrange(...newline)
                        _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    }
                }
                close(fd)
            }
            close(listener)
        }
    }

    /// Reads until a newline or 5 s.
    private func line(_ fd: Int32) -> String {
        String(decoding: SocketTestIO.receive(fd) { $0.contains(10) }, as: UTF8.self)
    }

    @Test func twoBridgesCarryEachRequestToTheFleetVMsSocketAndItsAnswerBack() throws {
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let control = directory + "/hci3.sock"
        let server = try LineServer(control)
        defer { server.stop() }
        // The fleet VM's bridge takes TCP and dials the control socket; the command VM's takes a path and dials TCP.
        let fleet = try ControlBridge.start(
            [try #require(ControlBridge.Join("tcp:127.0.0.1:7491=unix:\(control)"))], log: { _ in })
        defer { fleet.stop() }
        let local = directory + "/vm1-hci3.sock"
        let central = try ControlBridge.start(
            [try #require(ControlBridge.Join("unix:\(local)=tcp:127.0.0.1:7491"))], log: { _ in })
        defer { central.stop() }
        // Two clients one after the other, and two requests on one connection: each answered once, in order.
        for request in ["counters", "get heart-rate-measurement"] {
            let client = try UnixSocket.connect(local)
            defer { close(client) }
            SocketTestIO.send(client, request + "\n")
            #expect(line(client) == "ok \(request)\n")
        }
        let client = try UnixSocket.connect(local)
        defer { close(client) }
        SocketTestIO.send(client, "a\nb\n")
        var answers = line(client)
        if !answers.hasSuffix("ok b\n") { answers += line(client) }
        #expect(answers == "ok a\nok b\n")
    }

    @Test func aBridgeThatCannotListenSaysWhereAndKeepsNoSocket() throws {
        let taken = try #require(TCPEndpoint("127.0.0.1:7492"))
        let holder = try taken.listen()
        defer { close(holder) }
        let directory = try directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: TCPEndpoint.Failure.self) {
            _ = try ControlBridge.start(
                [
                    try #require(ControlBridge.Join("unix:\(directory)/a.sock=tcp:127.0.0.1:1")),
                    try #require(ControlBridge.Join("tcp:127.0.0.1:7492=unix:\(directory)/b.sock")),
                ], log: { _ in })
        }
        // The first join's listener was closed and its socket file removed when the second failed. (Whether a
        // connection to the closed socket is refused depends on the test process: a child another test spawns holds
        // every descriptor from its fork to its exec, so the closed listener may still take one meanwhile.)
        #expect(!FileManager.default.fileExists(atPath: directory + "/a.sock"))
        #expect(throws: TCPEndpoint.Failure.self) { _ = try UnixSocket.connect(directory + "/a.sock") }
    }
}
