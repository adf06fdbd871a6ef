import Dispatch
import FoundationEssentials
import LocalIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lab's shared air on RootCanal, run by `blemu lab air` inside a network namespace of its own (`unshare -n`)
/// with the VM: RootCanal, one connection to its HCI port per controller, `H4Relay` between those and the VM's
/// serial ports, then the VM itself (docs/lab.md, "The radio").
///
/// RootCanal listens on every interface with no option to choose, and anyone who reaches its HCI port adds a
/// controller to the air: in the namespace, only the VM can. The namespace's ports are its own, so they are fixed.
public struct RootCanalAir: Sendable {
    /// RootCanal's test channel (`add_remote` links another air through it).
    public static let testPort: UInt16 = 6401
    /// RootCanal's HCI port: each connection is a new controller, addressed in connection order.
    public static let hciPort: UInt16 = 6402
    /// RootCanal's BR/EDR and LE link ports (for other RootCanals' links).
    public static let linkPorts: (UInt16, UInt16) = (6403, 6404)
    /// The relay's port for controller i is `relayPort + i`; qemu's serial device i connects there.
    public static let relayPort: UInt16 = 6500
    /// RootCanal's log (its own output) in the results directory.
    public static let logFile = "rootcanal.log"
    /// The relay's log: the controllers' start-up and what the relay carried and changed.
    public static let relayLogFile = "radio.log"
    /// Written when the air fails while the VM runs; `LabMachine` reports it as the failed step "radio".
    public static let failureFile = "radio-failure"

    /// How long the fleet's VMs get, once the command's VM has ended, to see `stop`, leave their counters and power
    /// off, before they are stopped.
    static let fleetGrace: Duration = .seconds(60)

    /// The VMs on the air, as `LabMachine` writes them for `blemu lab air --plan`.
    public struct Plan: Codable, Sendable, Equatable {
        /// One VM: its command (qemu under timeout(1)), its controllers (consecutive on the air, in plan order), and
        /// its results directory.
        public struct Machine: Codable, Sendable, Equatable {
            /// qemu under timeout(1), its serial ports on the relay's ports for its controllers.
            public var command: [String]
            /// How many controllers it has.
            public var controllers: Int
            /// Its results directory.
            public var resultsDirectory: String
        }

        /// The command's VM first: the run ends when it does.
        public var machines: [Machine]
        /// Debian 13's loader and libraries for RootCanal when the host's glibc is older (`RootCanalInstall`).
        public var glibcRuntime: String?
        /// How this air meets airs elsewhere, when it does (docs/lab.md, "Airs on several machines").
        public var links: Links?

        /// An air's side of its links with others.
        public struct Links: Codable, Sendable, Equatable {
            /// The fourth byte of this air's controller addresses, DA:4C:10:BYTE:HH:LL (HH:LL the controller's
            /// place on the air): airs that meet must not give two controllers one address.
            public var addressByte: UInt8
            /// The path where the air takes links: each connection there is joined to RootCanal's LE link port,
            /// which makes it a device on this air that carries the other air's packets.
            public var socket: String
        }

        /// The file name in the run's results directory.
        public static let file = "air-plan.json"
    }

    /// The RootCanal executable.
    public var rootcanal: String
    /// The VMs, the command's first.
    public var plan: Plan

    /// An air for `plan`'s VMs with RootCanal at `rootcanal`.
    public init(rootcanal: String, plan: Plan) {
        self.rootcanal = rootcanal
        self.plan = plan
    }

    /// The run's results directory: the command's VM's, where the air's own logs go.
    var resultsDirectory: String { plan.machines.first?.resultsDirectory ?? "." }

    /// Why the air could not come up or went down: the line `failureFile` gets.
    struct Failure: Error {
        /// What failed, for the run's error message.
        let reason: String
    }

    /// Brings the air up, runs the VMs, tears the air down; returns the command VM's exit status (128 + the signal
    /// when one killed it), or 70 when the air could not be brought up (with `failureFile` saying why).
    public func run() -> Int32 {
        let log = RadioLog(path: resultsDirectory + "/" + Self.relayLogFile)
        var rootcanal: SpawnedProcess?
        var output: RootCanalLog?
        defer {
            // RootCanal keeps nothing worth a clean exit: a second's grace, then KILL.
            rootcanal?.stop(grace: .seconds(1))
            output?.finish()
        }
        do throws(Failure) {
            do { try LoopbackTCP.bringUpLoopback() } catch { throw Failure(reason: error.description) }
            let rootCanalLog = try RootCanalLog(path: resultsDirectory + "/" + Self.logFile)
            output = rootCanalLog
            let started = try startRootCanal(output: rootCanalLog, log: log)
            rootcanal = started
            let controllers = try connectControllers(rootcanal: started, log: log)
            let splice = try plan.links.map { links throws(Failure) in try open(links, controllers.count, log: log) }
            // Rung by each event the air waits for: RootCanal's exit, a VM's, the relay's end.
            let wake = DispatchSemaphore(value: 0)
            let relay = try RelayThread.start(controllers: controllers) { wake.signal() }
            let status = try serve(relay: relay, rootcanal: started, wake: wake, log: log)
            for line in relay.stop() { log.write(line) }
            splice?.stop()
            // What the air cost, for the fleet benchmark: RootCanal's peak resident set (VmHWM, proc(5)).
            if let status = try? String(
                contentsOfFile: "/proc/\(started.pid)/status", encoding: .utf8),
                let peak = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
            {
                log.write("RootCanal " + peak.replacing(/\s+/, with: " "))
            }
            return status
        } catch {
            record(error.reason, log: log)
            return 70
        }
    }

    /// Writes `reason` to `failureFile` and the log.
    private func record(_ reason: String, log: RadioLog) {
        log.write("failed: " + reason)
        try? (reason + "\n").write(
            toFile: resultsDirectory + "/" + Self.failureFile, atomically: true, encoding: .utf8)
    }

    /// Starts RootCanal with its ports, its output into `output` (`logFile`).
    private func startRootCanal(output: RootCanalLog, log: RadioLog) throws(Failure) -> SpawnedProcess {
        defer { output.closeWriteEnd() }
        // Under setpriv --pdeathsig: RootCanal never exits by itself, and an air killed outright (the lab's hard
        // limit, SIGKILL) would leave it running in the namespace. The signal follows the thread that started it,
        // the one that runs the air until it ends (prctl(2), PR_SET_PDEATHSIG).
        let arguments =
            RootCanalInstall.launch(rootcanal, glibcRuntime: plan.glibcRuntime) + [
                "-test_port=\(Self.testPort)", "-hci_port=\(Self.hciPort)", "-link_port=\(Self.linkPorts.0)",
                "-link_ble_port=\(Self.linkPorts.1)",
            ]
        // setpriv would only say "failed to execute" in the log: name the file here.
        guard FileManager.default.isExecutableFile(atPath: rootcanal) else {
            throw Failure(reason: "cannot start \(rootcanal): not an executable file")
        }
        let setpriv = "/usr/bin/setpriv"
        let guarded = FileManager.default.isExecutableFile(atPath: setpriv)
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess.start(
                guarded ? [setpriv, "--pdeathsig", "KILL", "--"] + arguments : arguments,
                standardOutput: .descriptor(output.writeEnd), standardError: .descriptor(output.writeEnd))
        } catch {
            throw Failure(reason: "cannot start \(rootcanal): \(error)")
        }
        log.write(
            "RootCanal \(rootcanal) started, pid \(process.pid)"
                + (plan.glibcRuntime.map { ", through the glibc in \($0)" } ?? ""))
        return process
    }

    /// One connection to RootCanal's HCI port per controller of the plan, and a port for qemu to connect each to
    /// (`relayPort + i`).
    private func connectControllers(
        rootcanal: SpawnedProcess, log: RadioLog
    ) throws(Failure) -> [(controller: Int32, listener: Int32)] {
        // One at a time, each seen to answer HCI Reset before the next: RootCanal's listen backlog is 1, and the
        // order of connection is the order of addresses.
        let clock = ContinuousClock()
        var connected: [(controller: Int32, listener: Int32)] = []
        for index in 0..<plan.machines.reduce(0, { $0 + $1.controllers }) {
            let start = clock.now
            var socket: Int32?
            while socket == nil {
                if let status = rootcanal.status {
                    throw Failure(reason: "RootCanal exited with status \(status) (see \(Self.logFile))")
                }
                socket = try? LoopbackTCP.connect(port: Self.hciPort)
                if socket == nil {
                    guard clock.now - start < .seconds(10) else {
                        throw Failure(
                            reason: "RootCanal's HCI port \(Self.hciPort) refused controller \(index) for 10 s")
                    }
                    usleep(50_000)
                }
            }
            guard let controller = socket, Self.reset(controller) else {
                throw Failure(reason: "RootCanal's controller \(index) did not answer HCI Reset within 5 s")
            }
            do {
                connected.append((controller, try LoopbackTCP.listen(port: Self.relayPort + UInt16(index))))
            } catch {
                throw Failure(reason: error.description)
            }
            log.write("controller \(index) on the air in \(clock.now - start)")
        }
        return connected
    }

    /// Gives the controllers this air's addresses (RootCanal's test channel), then takes links from other airs at
    /// `links.socket`, each joined to RootCanal's LE link port.
    private func open(_ links: Plan.Links, _ controllers: Int, log: RadioLog) throws(Failure) -> SocketSplice {
        do throws(TCPEndpoint.Failure) {
            let channel = try RootCanalTestChannel(port: Self.testPort)
            defer { channel.close() }
            let devices = Self.controllerIdentifiers(inList: try channel.command("list", []))
            guard devices.count == controllers else {
                throw TCPEndpoint.Failure(
                    description: "RootCanal lists \(devices.count) controllers on the air, not \(controllers)")
            }
            for (index, device) in devices.enumerated() {
                let address = Self.address(of: index, airByte: links.addressByte)
                _ = try channel.command("set_device_address", [String(device), address])
            }
            log.write(
                "controllers addressed \(Self.address(of: 0, airByte: links.addressByte)) and on, for links with other "
                    + "airs")
            let splice = try SocketSplice(
                entrances: [
                    .init(
                        name: "a link with another air", source: .listener(try UnixSocket.listen(links.socket)),
                        dial: { () throws(TCPEndpoint.Failure) in
                            do throws(LoopbackTCP.Failure) {
                                return try LoopbackTCP.connect(port: Self.linkPorts.1)
                            } catch {
                                throw TCPEndpoint.Failure(description: error.description)
                            }
                        },
                        patience: .seconds(10))
                ], log: { log.write($0) })
            try splice.start()
            return splice
        } catch {
            throw Failure(reason: "linking airs: \(error.description)")
        }
    }

    /// Controller `index`'s address on an air whose links gave it `airByte`.
    static func address(of index: Int, airByte: UInt8) -> String {
        [0xDA, 0x4C, 0x10, Int(airByte), index >> 8 & 0xFF, index & 0xFF]
            .map { String(cFormat: "%02X", $0) }.joined(separator: ":")
    }

    /// The device numbers of the controllers (hci_device) in RootCanal's `list` answer, in its order: the order they
    /// connected in, each line "  N:hci_device@ADDRESS".
    static func controllerIdentifiers(inList list: String) -> [Int] {
        list.split(whereSeparator: \.isNewline).compactMap { line in
            let trimmed = line.drop { $0 == " " }
            guard let colon = trimmed.firstIndex(of: ":"), trimmed[colon...].hasPrefix(":hci_device") else {
                return nil
            }
            return Int(trimmed[..<colon])
        }
    }

    /// Runs every VM of the plan until the command's has ended and the others have powered off (or were stopped);
    /// RootCanal or the relay failing meanwhile stops them all and is recorded. Returns the command VM's status.
    /// `wake` is signalled by the relay's end; this rings it for each exit too, and checks again after each ring, so
    /// it waits on events, never on a timer (a change between a check and the wait leaves its signal counted).
    private func serve(
        relay: RelayThread, rootcanal: SpawnedProcess, wake: DispatchSemaphore, log: RadioLog
    ) throws(Failure) -> Int32 {
        var started: [SpawnedProcess] = []
        for machine in plan.machines {
            do { started.append(try SpawnedProcess.start(machine.command)) } catch {
                started.forEach { $0.signal(SIGTERM) }
                throw Failure(reason: "cannot start \(machine.command[0]): \(error)")
            }
        }
        let machines = started
        do {
            for process in machines + [rootcanal] { try process.onExit { wake.signal() } }
        } catch {
            machines.forEach { $0.signal(SIGTERM) }
            throw Failure(reason: "cannot watch the VMs: \(error)")
        }
        // A TERM or INT for the lab (LabMachine stopping the run, a Ctrl-C) goes on to every VM; the air ends with
        // them.
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { for vm in machines { vm.signal(SIGTERM) } }
            source.resume()
            return source
        }
        defer { signals.forEach { $0.cancel() } }
        var failed = false
        var exited = Set<Int>()
        let command = machines[0]
        while command.isRunning {
            noteExits(of: machines, into: &exited, log: log)
            if !failed {
                var failure: String?
                if let status = rootcanal.status {
                    failure = "RootCanal exited with status \(status) while the VM ran (see \(Self.logFile))"
                } else if let result = relay.result, result != .stopped {
                    failure = Self.describe(result)
                }
                if let failure {
                    failed = true
                    record(failure, log: log)
                    for vm in machines { vm.signal(SIGTERM) }
                }
            }
            wake.wait()
        }
        // The run is over: each fleet VM leaves its counters and powers off, or is stopped.
        for machine in plan.machines.dropFirst() {
            _ = FileManager.default.createFile(
                atPath: machine.resultsDirectory + "/" + GuestStack.File.stop, contents: nil)
        }
        let deadline = ContinuousClock.now + Self.fleetGrace
        while machines.contains(where: \.isRunning) && ContinuousClock.now < deadline {
            noteExits(of: machines, into: &exited, log: log)
            _ = wake.wait(timeout: .after(deadline - ContinuousClock.now))
        }
        for vm in machines where vm.isRunning {
            log.write("a VM did not power off within \(Self.fleetGrace) of the run's end: stopping it")
            vm.signal(SIGTERM)
        }
        machines.forEach { $0.wait() }
        noteExits(of: machines, into: &exited, log: log)
        return command.wait()
    }

    /// Records each VM that has exited since the last call: `GuestStack.File.machineExit` in its results directory
    /// (the central's VM stops waiting for a fleet VM that exited) and a line in the log.
    private func noteExits(of machines: [SpawnedProcess], into exited: inout Set<Int>, log: RadioLog) {
        for (index, vm) in machines.enumerated() where !exited.contains(index) {
            guard let status = vm.status else { continue }
            exited.insert(index)
            let directory = plan.machines[index].resultsDirectory
            try? "\(status)\n".write(
                toFile: directory + "/" + GuestStack.File.machineExit, atomically: true, encoding: .utf8)
            log.write("vm\(index) exited with status \(status)")
        }
    }

    /// Sends HCI Reset and waits up to 5 s for its Command Complete: the controller is RootCanal's and live.
    static func reset(_ fd: Int32) -> Bool {
        let command: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
        guard command.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == command.count
        else { return false }
        var framer = H4Framer()
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 1, 100) >= 0 || errno == EINTR else { return false }
            guard fds[0].revents != 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return false }
            LoopbackTCP.setOption(fd, TCP_QUICKACK)
            framer.append(buffer.prefix(count))
            // Command Complete (0x0E) for opcode 0x0C03.
            while let packet = try? framer.next() {
                if packet.count >= 6, packet[1] == 0x0E, packet[4] == 0x03, packet[5] == 0x0C { return true }
            }
        }
        return false
    }

    /// The failure line for a relay that ended before the run did.
    static func describe(_ outcome: H4Relay.Outcome) -> String {
        switch outcome {
        case .stopped: "the relay stopped"
        case .controllerClosed(let index):
            "RootCanal closed controller \(index)'s connection while the VM ran (see \(logFile))"
        case .outOfStep(let index, let byte):
            "controller \(index)'s stream from RootCanal went out of step (0x\(String(byte, radix: 16)) where a "
                + "packet indicator belongs)"
        case .failed(let reason): "the relay failed: \(reason)"
        }
    }
}

/// `H4Relay` on a thread of its own, and what the waiting thread reads of it.
private final class RelayThread: Sendable {
    /// How the relay ended, and its report: a line per controller.
    private let job: ThreadJob<(outcome: H4Relay.Outcome, report: [String])>
    private let stopWriter: Int32

    private init(job: ThreadJob<(outcome: H4Relay.Outcome, report: [String])>, stopWriter: Int32) {
        self.job = job
        self.stopWriter = stopWriter
    }

    /// Starts a relay over `controllers` (each RootCanal connection with the port its qemu serial device connects
    /// to) on a new thread, which calls `onEnd` when the relay has ended.
    static func start(
        controllers: [(controller: Int32, listener: Int32)], onEnd: @escaping @Sendable () -> Void
    ) throws(RootCanalAir.Failure) -> RelayThread {
        var stop: [Int32] = [-1, -1]
        guard pipe(&stop) == 0 else {
            throw RootCanalAir.Failure(reason: "pipe: \(String(cString: strerror(errno)))")
        }
        for fd in stop { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let relay = H4Relay(
            controllers: controllers.map(\.controller), listeners: controllers.map(\.listener), stop: stop[0])
        let job: ThreadJob<(outcome: H4Relay.Outcome, report: [String])>
        do {
            job = try ThreadJob {
                var relay = relay
                let outcome = relay.run()
                return (outcome: outcome, report: relay.report)
            } then: {
                onEnd()
            }
        } catch {
            stop.forEach { close($0) }
            throw RootCanalAir.Failure(reason: "the H4 relay's \(error)")
        }
        return RelayThread(job: job, stopWriter: stop[1])
    }

    /// How the relay ended; nil while it runs.
    var result: H4Relay.Outcome? { job.result?.outcome }

    /// Stops the relay (when it still runs) and returns its report: a line per controller.
    func stop() -> [String] {
        _ = write(stopWriter, "x", 1)
        return job.wait()?.report ?? []
    }
}

/// `radio.log`: timestamped lines, appended.
private struct RadioLog: Sendable {
    let path: String

    func write(_ line: String) {
        try? LocalFile.append(Array("\(Date().formatted(.iso8601)) \(line)\n".utf8), toPath: path)
    }
}
