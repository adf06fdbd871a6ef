@_spi(Backend) import Peripheral

/// What bluetoothd knows of us and what we know of it: a value-type state machine with no I/O and no clock, as
/// `NotificationQueue` and `NotifyTable` are: one `Stage` whose cases carry their data. `BlueZBackend` feeds it
/// every input (bluetoothd's name owner, the adapter's InterfacesAdded/Removed and `Powered`, registration replies,
/// `Release`, what the user wants registered) and performs the actions it returns, and `shutDown()` says what to
/// unregister; tests drive it with no bus (BlueZLifecycleTests).
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

    /// Where bluetoothd, the adapter and the registrations are. Registrations live only in `.adapter`: with no
    /// bluetoothd, no adapter, or after shutdown, nothing can be registered, and the type says so.
    enum Stage: Sendable, Equatable {
        /// bluetoothd's name has no owner: it exited or crashed, and took every registration with it.
        case bluetoothdGone
        /// bluetoothd is there without the adapter (removed, or a new bluetoothd without it).
        case adapterGone
        /// bluetoothd and the adapter are there, powered or not, with what bluetoothd has accepted.
        case adapter(powered: Bool, registered: Set<Registration>)
        /// The backend shut down: nothing is registered again.
        case shutDown
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
        /// The user wants this registered (a service published, advertising started) whenever bluetoothd and the
        /// adapter are there; the backend registers it next.
        case want(Registration)
        /// The user no longer wants it (advertising stopped, the last service removed, a refused registration).
        case unwant(Registration)
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

    /// Where bluetoothd, the adapter and the registrations are.
    private(set) var stage: Stage
    /// What the backend wants registered whenever bluetoothd and the adapter are there; changed by `.want` and
    /// `.unwant`.
    private(set) var wanted: Set<Registration> = [.agent]
    /// Counts the losses of every registration (bluetoothd left, the adapter went): a reply stamps its own.
    private(set) var generation = 0

    /// A machine for a bluetoothd that is there, with the adapter as its object tree shows it.
    init(adapterPowered: Bool) {
        stage = .adapter(powered: adapterPowered, registered: [])
    }

    /// Whether `shutDown()` happened.
    var isShutDown: Bool { stage == .shutDown }

    /// Whether the adapter is powered; nil while bluetoothd or the adapter is gone, or after shutdown.
    var adapterPowered: Bool? {
        if case .adapter(let powered, _) = stage { powered } else { nil }
    }

    /// The state the manager should see now.
    var reportedState: PeripheralManagerState {
        switch stage {
        case .bluetoothdGone: .resetting
        case .adapterGone: .unsupported
        case .adapter(let powered, _): powered ? .poweredOn : .poweredOff
        case .shutDown: .unknown
        }
    }

    /// What is wanted and not registered, in registration order; empty while bluetoothd or the adapter is gone,
    /// and after shutdown.
    var missing: [Registration] {
        guard case .adapter(_, let registered) = stage else { return [] }
        return wanted.subtracting(registered).sorted()
    }

    /// Whether this registration is in place (and so must be unregistered before it is made again).
    func isRegistered(_ registration: Registration) -> Bool {
        if case .adapter(_, let registered) = stage { registered.contains(registration) } else { false }
    }

    /// Applies an event; returns what the backend must do. After shutdown every event is ignored.
    mutating func handle(_ event: Event) -> [Action] {
        switch (stage, event) {
        case (.shutDown, _):
            return []
        case (_, .want(let registration)):
            wanted.insert(registration)
            return []
        case (_, .unwant(let registration)):
            wanted.remove(registration)
            return []
        case (.bluetoothdGone, .bluetoothdLeft):
            return []
        case (_, .bluetoothdLeft):
            stage = .bluetoothdGone
            generation += 1
            return [.forgetLinks(reason: "bluetoothd left", bluetoothdChanged: true), .report(.resetting)]
        case (_, .bluetoothdArrived(.none)):
            stage = .adapterGone
            return [.report(.unsupported)]
        case (.adapter(_, let registered), .bluetoothdArrived(let powered?)),
            (.adapter(_, let registered), .adapterAdded(let powered)):
            // The same bluetoothd announcing itself twice keeps what it accepted: the second pass registers nothing.
            stage = .adapter(powered: powered, registered: registered)
            return [.registerAgain(reason: Self.reason(for: event))]
        case (_, .bluetoothdArrived(let powered?)), (_, .adapterAdded(let powered)):
            stage = .adapter(powered: powered, registered: [])
            return [.registerAgain(reason: Self.reason(for: event))]
        case (.adapter, .adapterRemoved):
            stage = .adapterGone
            generation += 1
            return [.forgetLinks(reason: "adapter removed", bluetoothdChanged: false), .report(.unsupported)]
        case (_, .adapterRemoved):
            return []
        case (.adapter(let was, let registered), .powered(let powered)) where was != powered:
            // bluetoothd keeps the registrations across power off; the kernel clears the advertising sets.
            stage = .adapter(powered: powered, registered: registered)
            guard powered else {
                return [.forgetLinks(reason: "adapter powered off", bluetoothdChanged: false), .report(.poweredOff)]
            }
            return [.report(.poweredOn)] + (wanted.contains(.advertisement) ? [.refreshAdvertisement] : [])
        case (_, .powered):
            return []
        case (.adapter(let powered, var registered), .registered(let registration, let stamp)):
            // A reply from a bluetoothd that has since left registered nothing with the one that is there now.
            guard stamp == generation else { return [] }
            registered.insert(registration)
            stage = .adapter(powered: powered, registered: registered)
            return []
        case (_, .registered):
            return []
        case (.adapter(let powered, var registered), .unregistered(let registration)):
            registered.remove(registration)
            stage = .adapter(powered: powered, registered: registered)
            return []
        case (_, .unregistered):
            return []
        }
    }

    /// Ends the machine: returns what is registered, in the order to unregister it (advertisement, application,
    /// agent: the reverse of registering), and ignores every event from then on.
    mutating func shutDown() -> [Registration] {
        defer { stage = .shutDown }
        guard case .adapter(_, let registered) = stage else { return [] }
        return registered.sorted().reversed()
    }

    private static func reason(for event: Event) -> String {
        if case .adapterAdded = event { "adapter appeared" } else { "bluetoothd restarted" }
    }
}
