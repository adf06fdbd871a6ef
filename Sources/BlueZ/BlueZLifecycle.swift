import Peripheral

/// What bluetoothd knows of us and what we know of it: a value-type state machine with no I/O and no clock, as
/// `NotificationQueue` and `NotifyTable` are. `BlueZBackend` feeds it what the bus says (bluetoothd's name owner,
/// the adapter's InterfacesAdded/Removed and `Powered`, registration replies, `Release`, shutdown) and performs the
/// actions it returns; tests drive it with no bus (BlueZLifecycleTests).
///
/// The rules come from what bluetoothd does (docs/bluez.md, "Links, power and restarts"):
/// - A bluetoothd that leaves forgets every registration; a new one announces itself twice (the name's new owner,
///   then InterfacesAdded for the adapter), so registering again must be idempotent: only what is missing is
///   registered, and a second announcement finds nothing missing.
/// - Power off keeps the registrations but the kernel clears the controller's advertising sets, which 5.66 never
///   adds back (src/advertising.c has no handler for MGMT Advertising Removed): at power on the advertisement is
///   registered again.
/// - A registration whose reply arrives after bluetoothd left belongs to the bluetoothd that is gone: every loss
///   starts a new generation, and a reply stamped with an older one changes nothing.
struct BlueZLifecycle: Sendable, Equatable {
    /// Something the backend registers with bluetoothd, in the order it registers them.
    enum Registration: Int, Sendable, Hashable, CaseIterable, Comparable {
        /// The pairing agent (`AgentManager1.RegisterAgent`), with the adapter's alias.
        case agent
        /// The GATT application (`GattManager1.RegisterApplication`).
        case application
        /// The advertisement (`LEAdvertisingManager1.RegisterAdvertisement`).
        case advertisement

        static func < (lhs: Registration, rhs: Registration) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The adapter as bluetoothd shows it.
    enum Adapter: Sendable, Equatable {
        /// bluetoothd has no such adapter (removed, or a new bluetoothd without it).
        case absent
        /// The adapter is there, powered or not.
        case present(powered: Bool)
    }

    /// What happened on the bus.
    enum Event: Sendable, Equatable {
        /// bluetoothd's name lost its owner: it exited or crashed.
        case bluetoothdLeft
        /// bluetoothd's name has a new owner, whose object tree shows the adapter so (nil: no such adapter).
        case bluetoothdArrived(adapterPowered: Bool?)
        /// InterfacesAdded for the adapter.
        case adapterAdded(powered: Bool)
        /// InterfacesRemoved for the adapter.
        case adapterRemoved
        /// The adapter's `Powered` changed.
        case powered(Bool)
        /// bluetoothd accepted a registration made during `generation`.
        case registered(Registration, generation: Int)
        /// The backend unregistered (or bluetoothd released) one registration.
        case unregistered(Registration)
        /// The backend is shutting down: nothing is registered again after this.
        case shutDown
    }

    /// What the backend must do, in order.
    enum Action: Sendable, Equatable {
        /// Report the adapter's state to the manager.
        case report(PeripheralManagerState)
        /// End every subscription and forget every link: bluetoothd or the adapter took them.
        case forgetLinks(reason: String, bluetoothdChanged: Bool)
        /// Register what is missing (`missing`), then report the adapter's state.
        case registerAgain(reason: String)
        /// Unregister and register the advertisement, so that bluetoothd puts it on the controller again.
        case refreshAdvertisement
    }

    /// The adapter as last seen.
    private(set) var adapter: Adapter
    /// What bluetoothd has accepted and not forgotten.
    private(set) var registered: Set<Registration> = []
    /// What the backend wants registered whenever bluetoothd and the adapter are there.
    var wanted: Set<Registration> = [.agent]
    /// Counts the losses of every registration (bluetoothd left, the adapter went): a reply stamps its own.
    private(set) var generation = 0
    /// Whether bluetoothd's name has an owner.
    private(set) var isBluetoothdPresent = true
    /// Whether `shutDown` happened.
    private(set) var isShutDown = false

    /// A machine for a bluetoothd that is there, with the adapter as its object tree shows it.
    init(adapterPowered: Bool) {
        adapter = .present(powered: adapterPowered)
    }

    /// The state the manager should see now.
    var reportedState: PeripheralManagerState {
        switch adapter {
        case .absent: .unsupported
        case .present(let powered): powered ? .poweredOn : .poweredOff
        }
    }

    /// Whether the adapter is there and powered.
    var isPowered: Bool { adapter == .present(powered: true) }

    /// What is wanted and not registered, in registration order; empty while bluetoothd, the adapter or the
    /// backend is gone.
    var missing: [Registration] {
        guard !isShutDown, isBluetoothdPresent, adapter != .absent else { return [] }
        return wanted.subtracting(registered).sorted()
    }

    /// Whether this registration is in place (and so must be unregistered before it is made again).
    func isRegistered(_ registration: Registration) -> Bool { registered.contains(registration) }

    /// Applies an event; returns what the backend must do.
    mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .bluetoothdLeft:
            guard isBluetoothdPresent else { return [] }
            isBluetoothdPresent = false
            loseRegistrations()
            return [.forgetLinks(reason: "bluetoothd left", bluetoothdChanged: true), .report(.resetting)]
        case .bluetoothdArrived(let powered):
            isBluetoothdPresent = true
            guard let powered else {
                adapter = .absent
                return [.report(.unsupported)]
            }
            adapter = .present(powered: powered)
            return isShutDown ? [] : [.registerAgain(reason: "bluetoothd restarted")]
        case .adapterAdded(let powered):
            adapter = .present(powered: powered)
            return isShutDown ? [] : [.registerAgain(reason: "adapter appeared")]
        case .adapterRemoved:
            adapter = .absent
            loseRegistrations()
            return [.forgetLinks(reason: "adapter removed", bluetoothdChanged: false), .report(.unsupported)]
        case .powered(let powered):
            guard case .present(let was) = adapter, was != powered else { return [] }
            adapter = .present(powered: powered)
            guard powered else {
                return [.forgetLinks(reason: "adapter powered off", bluetoothdChanged: false), .report(.poweredOff)]
            }
            let refresh = !isShutDown && wanted.contains(.advertisement) && isBluetoothdPresent
            return [.report(.poweredOn)] + (refresh ? [.refreshAdvertisement] : [])
        case .registered(let registration, let stamp):
            // A reply from a bluetoothd that has since left registered nothing with the one that is there now.
            guard stamp == generation, !isShutDown else { return [] }
            registered.insert(registration)
            return []
        case .unregistered(let registration):
            registered.remove(registration)
            return []
        case .shutDown:
            isShutDown = true
            registered.removeAll()
            return []
        }
    }

    private mutating func loseRegistrations() {
        registered.removeAll()
        generation += 1
    }
}
