/// How a run's machines share RootCanal's one air: the command's VM with the central, and, for a fleet larger than
/// one VM takes or peripherals on another system, VMs that only serve peripherals (docs/lab.md, "A fleet").
///
/// Pure: plans directories, controllers and configurations; `LabMachine` prepares and boots them.
public struct LabFleet: Sendable, Equatable {
    /// One VM of the run.
    public struct Machine: Sendable, Equatable {
        /// "vm0" for the command's VM, "vm1"... for the others.
        public var name: String
        /// What this VM boots, with its own results directory (the run's for vm0, `<results>/vmN` for the others),
        /// controllers and profiles.
        public var configuration: LabConfiguration
        /// The first of its controllers' places on the air, in the order the relay connects them (addresses are
        /// given in that order).
        public var firstController: Int
        /// Indices into the run's `profiles` of the peripherals this VM serves.
        public var profiles: Range<Int>
    }

    /// vm0 (the command's) first.
    public let machines: [Machine]

    /// Whether the run spans VMs.
    public var spansMachines: Bool { machines.count > 1 }

    /// The VMs that serve peripherals only.
    public var peripheralMachines: ArraySlice<Machine> { machines.dropFirst() }

    /// The plan for `configuration`: one VM, as the configuration says, unless it is on RootCanal and its profiles
    /// are more than `devicesPerMachine` or asked on another system; then vm0 holds the central alone and each
    /// further VM up to `devicesPerMachine` peripherals, in profile order. Without profiles there is no fleet to
    /// put elsewhere, and `peripheralSystem` is ignored.
    public init(_ configuration: LabConfiguration) {
        let profiles = configuration.profiles
        guard configuration.radio == .rootcanal, !profiles.isEmpty,
            profiles.count > configuration.devicesPerMachine || configuration.peripheralSystem != nil
        else {
            machines = [
                Machine(name: "vm0", configuration: configuration, firstController: 0, profiles: profiles.indices)
            ]
            return
        }
        var central = configuration
        central.profiles = []
        central.controllers = 1
        var planned = [Machine(name: "vm0", configuration: central, firstController: 0, profiles: 0..<0)]
        var next = 1
        for start in stride(from: 0, to: profiles.count, by: max(1, configuration.devicesPerMachine)) {
            let range = start..<min(profiles.count, start + configuration.devicesPerMachine)
            var machine = configuration
            let name = "vm\(planned.count)"
            machine.resultsDirectory = configuration.resultsDirectory + "/" + name
            machine.profiles = Array(profiles[range])
            machine.controllers = range.count
            if let system = configuration.peripheralSystem {
                machine.bluez = system.bluez
                machine.kernel = system.kernel
            }
            planned.append(Machine(name: name, configuration: machine, firstController: next, profiles: range))
            next += range.count
        }
        machines = planned
    }

    /// Every controller on the air.
    public var controllers: Int { machines.reduce(0) { $0 + $1.configuration.controllers } }
}
