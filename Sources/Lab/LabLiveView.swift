/// `blemu lab run --ui`: a live view (`blemu ui`) of each peripheral, served inside the VM next to it and reached
/// from the host's browser through qemu's user-mode network: the VM's view of hciK listens on 10.0.2.15:8080+K, and
/// qemu forwards the host's `address:port+K` there (`hostfwd`, with `restrict=on` so the guest reaches nothing
/// outside). Inside the VM the view is not on loopback, so it takes the token the host printed, and refuses a Host
/// or Origin that is not the one the browser used.
public struct LabLiveView: Sendable, Equatable {
    /// The host's address the views are forwarded from (IPv4: qemu's hostfwd takes no other).
    public var host: String
    /// The first peripheral's port on the host; hciK's is `port + K`.
    public var port: UInt16
    /// The token every view takes.
    public var token: String

    /// Views forwarded from `host:port` on, each taking `token`.
    public init(host: String, port: UInt16, token: String) {
        self.host = host
        self.port = port
        self.token = token
    }

    /// The guest port of the first peripheral's view.
    static let guestPortBase: UInt16 = 8080

    /// The page of the peripheral on controller `index`, as the host's browser opens it.
    public func url(peripheral index: Int) -> String {
        "http://\(host):\(Int(port) + index)/?token=\(token)"
    }

    /// qemu's network for a VM serving `peripherals` views.
    func qemuNetwork(peripherals: Int) -> [String] {
        let forwards = (0..<peripherals).map { index in
            ",hostfwd=tcp:\(host):\(Int(port) + index)-\(ControlBridge.guestAddress):\(Int(Self.guestPortBase) + index)"
        }
        return ["-nic", "user,model=virtio-net-pci,restrict=on" + forwards.joined()]
    }

    /// The script lines that start each peripheral's view, once the peripherals serve.
    func guestStart(blemu: String, controllers: [String], events: (String) -> String) -> String {
        var lines = ["step live-view", "bring_up_network \(ControlBridge.guestAddress)"]
        for (index, controller) in controllers.enumerated() {
            lines.append(
                "\(blemu) ui --control \(GuestStack.controlSocket(controller)) --events \"\(events(controller))\" "
                    + "--listen \(ControlBridge.guestAddress):\(Int(Self.guestPortBase) + index) --ui-token \(token) "
                    + ">\"$W/\(GuestStack.File.liveView(controller))\" 2>&1 &")
        }
        return lines.joined(separator: "\n")
    }
}
