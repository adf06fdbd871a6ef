import BlueZModel
import Testing

/// What `blemu doctor` and `blemu run` conclude from versions and main.conf, without a host.
struct HostDiagnosisTests {
    @Test func theMGMTWindowFailsOnlyWithABluetoothdThatSendsTheExtraBytes() {
        let broken = KernelBlueZPair.finding(kernel: "6.12.93+rpt-rpi-v8", bluez: "5.82")
        #expect(broken.status == .fail && broken.id == "kernel-bluez-pair")
        #expect(broken.detail.contains("Invalid Parameters (0x0d)"))
        #expect(broken.fix == "upgrade the kernel to 6.12.94 or later, or bluetoothd to 5.87 or later")
        #expect(KernelBlueZPair.finding(kernel: "6.12.93", bluez: "5.87").status == .ok)
        #expect(KernelBlueZPair.finding(kernel: "6.1.175", bluez: "5.66").status == .fail)
        #expect(KernelBlueZPair.finding(kernel: "6.18.34", bluez: "5.72").status == .fail)
        // Between the last release seen failing and the first seen working: said, not asserted.
        #expect(KernelBlueZPair.finding(kernel: "6.18.35", bluez: "5.82").status == .warn)
        #expect(KernelBlueZPair.finding(kernel: "6.12.93", bluez: nil).status == .warn)
        for fine in ["6.1.174", "6.1.176", "6.12.91", "6.12.94", "6.12.118+deb13-amd64", "7.2.13+deb14-amd64", "6.6"] {
            #expect(KernelBlueZPair.finding(kernel: fine, bluez: "5.82").status == .ok, "\(fine)")
        }
    }

    @Test func versionsCompareNumberByNumber() {
        #expect(KernelBlueZPair.isOlder("5.9", than: "5.66"))
        #expect(KernelBlueZPair.isOlder("5.66", than: "5.87"))
        #expect(!KernelBlueZPair.isOlder("5.87", than: "5.87"))
        #expect(!KernelBlueZPair.isOlder("5.100", than: "5.87"))
        #expect(KernelBlueZPair.numbers(of: "6.12.93+rpt-rpi-v8") == [6, 12, 93])
    }

    @Test func blemuRunNamesTheCauseAndBothFixesOnABadPairAndSendsOthersToTheDoctor() {
        let pair = RegistrationDiagnosis.explain(
            operation: "RegisterAdvertisement", errorName: "org.bluez.Error.Failed", kernel: "6.12.92",
            bluez: "5.82", adapter: "hci0")
        #expect(pair.hasPrefix("; kernel 6.12.92 refuses the 8 extra bytes bluetoothd before 5.87 sends"))
        #expect(pair.hasSuffix("upgrade the kernel to 6.12.94 or later, or bluetoothd to 5.87 or later"))
        let taken = RegistrationDiagnosis.explain(
            operation: "RegisterAdvertisement", errorName: "org.bluez.Error.NotPermitted", kernel: "6.1.0-41-amd64",
            bluez: "5.66", adapter: "hci1")
        #expect(taken.contains("every advertising instance of hci1 is taken"))
        let other = RegistrationDiagnosis.explain(
            operation: "RegisterApplication", errorName: "org.bluez.Error.Failed", kernel: "6.12.92", bluez: "5.82",
            adapter: "hci0")
        #expect(other == "; run `blemu doctor --adapter hci0` to see what is wrong with this host")
    }

    @Test func mainConfSettingsThatChangeWhatACentralSeesAreNamed() {
        let conf = MainConf(
            text: """
                # comment
                [General]
                Privacy = device
                ControllerMode = bredr
                JustWorksRepairing = always
                ;DeviceID = false
                [GATT]
                Cache = no
                """)
        let findings = Dictionary(uniqueKeysWithValues: conf.findings(bluez: "5.82").map { ($0.id, $0) })
        #expect(findings["main-conf-device-id"]?.status == .warn)
        #expect(findings["main-conf-privacy"]?.status == .warn)
        #expect(findings["main-conf-controller-mode"]?.status == .fail)
        #expect(findings["main-conf-controller-mode"]?.fix?.contains("ControllerMode = dual") == true)
        #expect(findings["main-conf-just-works-repairing"]?.detail.contains("silently") == true)
        #expect(findings["main-conf-gatt-cache"]?.detail.contains("every connection") == true)
        #expect(findings["main-conf-gatt-channels"]?.status == .ok)
    }

    @Test func theChannelsDefaultIsThatOfTheVersion() {
        let empty = MainConf(text: "")
        #expect(empty.findings(bluez: "5.66").first { $0.id == "main-conf-gatt-channels" }?.status == .warn)
        #expect(empty.findings(bluez: "5.82").first { $0.id == "main-conf-gatt-channels" }?.status == .ok)
        let lab = MainConf(text: "[General]\nDeviceID = false\n[GATT]\nChannels = 1\n")
        #expect(lab.findings(bluez: "5.66").allSatisfy { $0.status == .ok })
    }

    @Test func onlyAFindingThatNeedsActionKeepsItsFix() {
        #expect(HostFinding("x", .ok, "fine", fix: "nothing").fix == nil)
        #expect(HostFinding("x", .skip, "not run", fix: "nothing").fix == nil)
        #expect(HostFinding("x", .warn, "hm", fix: "do").fix == "do")
        #expect([HostFinding.Status.ok, .warn, .skip].max() == .warn)
    }

    @Test func bluetoothd587sCrashOnUUIDFiltersIsAWarningWithAWayAround() {
        let crash = KernelBlueZPair.crashFinding(bluez: "5.87")
        #expect(crash.status == .warn && crash.fix?.contains("82af2beaf") == true)
        #expect(KernelBlueZPair.crashFinding(bluez: "5.82").status == .ok)
        #expect(KernelBlueZPair.crashFinding(bluez: nil).status == .skip)
    }
}
