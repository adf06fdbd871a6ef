import FoundationEssentials

extension LabMachine {
    /// The initramfs for `kernel` from the cache, built when missing.
    func cachedInitramfs(kernel: LabKernel, busybox: String) throws -> String {
        do {
            return try Initramfs.cached(
                in: configuration.cacheDirectory, kernel: kernel, busybox: busybox, initScript: GuestInit.script)
        } catch let error as LabError {
            throw error
        } catch {
            throw LabError.io("cannot build the initramfs in \(configuration.cacheDirectory): \(error)")
        }
    }

    /// Makes a fleet VM's results directory and writes what it boots: its BlueZ's version, main.conf, guest script
    /// (serving until the run ends) and profiles. Throws `LabError.prerequisitesMissing` when its system is not
    /// installed.
    func prepare(
        _ machine: LabFleet.Machine, copies: [(path: String, copy: ProfileCopies.Copy)], busybox: String,
        radio: String
    ) throws -> (machine: LabFleet.Machine, kernel: LabKernel, initramfs: String, script: String) {
        let vm = machine.configuration
        let prerequisites = LabPrerequisites.check(bluez: vm.bluez, kernel: vm.kernel, radio: vm.radio)
        guard prerequisites.isSatisfied, let kernel = prerequisites.kernel,
            let bluez = vm.bluez ?? BlueZInstall.system()
        else { throw LabError.prerequisitesMissing(prerequisites.report) }
        let directory = vm.resultsDirectory
        do {
            // A results directory used before must not hand this run the last one's marks.
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw LabError.io("cannot create \(directory): \(error)")
        }
        try write(bluez.version + "\n", to: directory + "/" + GuestStack.File.bluezVersion)
        try write(
            GuestStack.mainConf(for: vm.radio, dualMode: vm.isDualMode), to: directory + "/" + GuestStack.File.mainConf)
        try copyBlemuWhereTheGuestSeesIt(vm)
        var stack = GuestStack(
            configuration: vm, command: [], bluez: bluez, radio: radio, busybox: busybox,
            profileCopies: try copyProfiles(copies, for: machine))
        stack.role = .peripherals
        let script = directory + "/" + GuestStack.File.script
        try write(GuestStack.functions, to: directory + "/" + GuestStack.File.functions)
        try write(stack.script, to: script)
        return (machine, kernel, try cachedInitramfs(kernel: kernel, busybox: busybox), script)
    }

    /// Writes the air's plan as JSON.
    func writePlan(_ plan: RootCanalAir.Plan, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do { try encoder.encode(plan).write(to: URL(fileURLWithPath: path)) } catch {
            throw LabError.io("cannot write \(path): \(error)")
        }
    }
}

extension LabConfiguration {
    /// This configuration with `accelerator`.
    func with(accelerator: Accelerator) -> LabConfiguration {
        var copy = self
        copy.accelerator = accelerator
        return copy
    }
}
