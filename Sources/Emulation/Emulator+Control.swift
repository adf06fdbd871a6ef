import GATTModel
import GATTProfile
import Peripheral

/// What the control socket asks of a running emulator. Every failure is a `ControlError`, answered to the client;
/// none stops the emulator.
extension Emulator {
    /// The current value of a characteristic; throws `.unknownCharacteristic`.
    public func value(of id: String) throws(ControlError) -> [UInt8] {
        guard let characteristic = characteristics[id] else { throw .unknownCharacteristic(id) }
        return server.store.value(of: characteristic)
    }

    /// Stores a value and, when the characteristic notifies or indicates, sends it to its subscribers.
    /// Throws `.unknownCharacteristic`, or `.badValue` when the store refuses it (constant, too long).
    public func set(_ value: [UInt8], for id: String) async throws(ControlError) {
        guard let characteristic = characteristics[id] else { throw .unknownCharacteristic(id) }
        guard store(value, for: id) != nil else {
            throw .badValue("\(id) does not take \(value.count) bytes (constant, or longer than its maximum)")
        }
        if characteristic.properties.contains(.notify) || characteristic.properties.contains(.indicate) {
            await send(.value(characteristic, value, to: nil, times: 1))
        }
    }

    /// Sends the current value to the subscribers now, `times` times, or only to the subscribed central `centralID`
    /// (Core Bluetooth's `onSubscribedCentrals:`). Throws `.unknownCharacteristic`, `.badValue` when the
    /// characteristic cannot notify or indicate or `centralID` is not subscribed to it, and `.failed`, queuing none,
    /// when the outbox has no room for all `times` (updates already wait for a central that does not read).
    public func notify(_ id: String, to centralID: String? = nil, times: Int = 1) async throws(ControlError) {
        guard let characteristic = characteristics[id] else { throw .unknownCharacteristic(id) }
        guard characteristic.properties.contains(.notify) || characteristic.properties.contains(.indicate) else {
            throw .badValue("\(id) has neither notify nor indicate")
        }
        var target: Central?
        if let centralID {
            let subscribed = await manager?.subscribedCentrals(of: characteristic) ?? []
            target = try Self.central(centralID, in: subscribed, isNot: "subscribed to \(id)", listedAs: "subscribed")
        }
        guard times >= 1 else { throw .badValue("`times` must be at least 1, not \(times)") }
        guard outbox.fits(times) else {
            throw .failed(
                "\(outbox.updates) updates already wait for the notification queue (at most \(outbox.capacity)): "
                    + "\(times) more do not fit; try again once they have gone (the `queue-ready` event)")
        }
        await send(.value(characteristic, server.store.value(of: characteristic), to: target, times: times))
    }

    /// The connected centrals and the characteristics each one subscribed to.
    public func centrals() async -> [(central: Central, subscriptions: [String])] {
        guard let manager else { return [] }
        var subscriptions: [String: [String]] = [:]
        for characteristic in characteristics.values.sorted(by: { $0.id < $1.id }) {
            for central in await manager.subscribedCentrals(of: characteristic) {
                subscriptions[central.id, default: []].append(characteristic.id)
            }
        }
        return await manager.connectedCentrals.map { ($0, subscriptions[$0.id] ?? []) }
    }

    /// Drops the link of the connected central `centralID`, or of every connected central when nil: the device
    /// walking out of range, for a test of an app's reconnection (a `disconnect` fault does the same on a coming
    /// request). Returns the centrals whose disconnection the stack confirmed; each is then recorded as
    /// `disconnected` with the reason bluetoothd gives, as any lost link is. Throws `.badValue` when `centralID` is not
    /// connected, `.failed` with the stack's reason.
    public func disconnect(_ centralID: String? = nil) async throws(ControlError) -> [String] {
        guard let manager else { throw .failed("the emulator is not running") }
        var target: Central?
        if let centralID {
            target = try Self.central(
                centralID, in: await manager.connectedCentrals, isNot: "connected", listedAs: "connected")
        }
        do { return try await manager.disconnect(target) } catch { throw .failed(error.description) }
    }

    /// The central of `centrals` with id `id`. Throws `.badValue` saying it is not `state`, with the ids that are
    /// under `label`: "central X is not subscribed to battery-level (subscribed: none)".
    private static func central(
        _ id: String, in centrals: [Central], isNot state: String, listedAs label: String
    ) throws(ControlError) -> Central {
        if let central = centrals.first(where: { $0.id == id }) { return central }
        let names = centrals.map(\.id).sorted()
        throw .badValue(
            "central \(id) is not \(state) (\(label): \(names.isEmpty ? "none" : names.joined(separator: ", ")))")
    }

    /// Adds a fault now: a request fault's `nth` counts from this call. Throws `.unknownCharacteristic`.
    public func inject(_ fault: Fault) throws(ControlError) {
        if case .request(_, let id?, _) = fault.trigger, characteristics[id] == nil {
            throw .unknownCharacteristic(id)
        }
        let now = clock.now()
        engines.withLock { $0.faults.inject(fault, at: now) }
        arm()
    }

    /// Ends every fault delay now and makes later ones end at once: the held requests are answered as they would
    /// have been when their delay ended; requests waiting for a handler get its fallback. For shutdown, before unregistering (`blemu run` then waits for the answers).
    public nonisolated func releaseHeldRequests() {
        handler.release.release()
        handler.handlers.releaseAll()
    }

    /// The programs answering requests over the control socket (`{"command":"handle"}`).
    public nonisolated var requestHandlers: RequestHandlers { handler.handlers }

    /// The profile's schedules: which characteristic each writes, its interval, paused or not, running or not.
    public func schedules() -> [Schedules.Status] {
        engines.withLock { $0.schedules.statuses }
    }

    /// Holds the schedules of characteristic `id` (all when nil), so a value a test sets stays until `resume`.
    /// Throws `.unknownCharacteristic`, or `.badValue` when `id` has no schedule.
    public func pauseSchedules(_ id: String?) throws(ControlError) {
        try checkScheduled(id)
        _ = engines.withLock { $0.schedules.pause(id) }
        arm()
    }

    /// Lets held schedules run again from now (the first tick one interval later). Throws as `pauseSchedules`.
    public func resumeSchedules(_ id: String?) throws(ControlError) {
        try checkScheduled(id)
        let now = clock.now()
        _ = engines.withLock { $0.schedules.resume(id, at: now) }
        arm()
    }

    private func checkScheduled(_ id: String?) throws(ControlError) {
        guard let id else { return }
        guard characteristics[id] != nil else { throw .unknownCharacteristic(id) }
        guard schedules().contains(where: { $0.characteristicID == id }) else {
            throw .badValue("\(id) has no schedule")
        }
    }

    /// Puts the device back as the profile starts it, so a test does not see what the one before it did: every
    /// value is the profile's initial one again, the schedules start over from now (held ones released), write
    /// rules' ramps stop, the faults armed through the control socket are dropped and the profile's own count
    /// requests from now, and a state file (`--restore-id`) forgets the values centrals wrote. What the centrals did
    /// stays: who is connected and subscribed, and the notifications already queued for them. The counters keep
    /// counting (a test reads them as differences). Subscribers are not notified of the values put back: a reset is
    /// the test's set-up, not the device's behaviour (`notify` sends a value when a test wants one). Returns the ids
    /// whose value changed, in profile order.
    @discardableResult
    public func reset() async -> [String] {
        let now = clock.now()
        let isStarted = manager != nil
        let initial = initialEngines
        engines.withLock { $0.reset(to: initial, at: now, isStarted: isStarted) }
        var changed: [String] = []
        for characteristic in profile.characteristics {
            let value = characteristic.value.bytes
            guard server.store.value(of: characteristic) != value else { continue }
            if store(value, for: characteristic.id) != nil { changed.append(characteristic.id) }
        }
        arm()
        await stateStore?.forgetWrites()
        log?.record(.reset(changed: changed))
        return changed
    }

    /// The device's state variables now (`behaviour.state`), by name.
    public func protocolState() -> [String: FieldValue] {
        engines.withLock { $0.rules.state }
    }

    /// The declared type of a state variable; nil for an unknown name.
    public func stateType(of name: String) -> FieldType? {
        engines.withLock { $0.rules.stateType(of: name) }
    }

    /// Sets state variables from the control socket, in order; each value was checked against its type.
    public func setState(_ values: [(String, FieldValue)]) {
        engines.withLock { engines in
            for (name, value) in values { _ = engines.rules.setState(name, to: value) }
        }
    }

    /// Records where the device is served, for `status`.
    public func serve(on host: ServingHost) { self.host = host }

    /// What `status` answers: the manager's state, whether the advertisement is on the air, the adapter and
    /// bluetoothd's version (asked once).
    func hostStatus() async -> (state: String, advertising: Bool, adapter: String?, bluez: String?) {
        let state = await manager?.state.rawValue ?? "stopped"
        let advertising = await manager?.isAdvertising ?? false
        if bluezVersion == nil, let host { bluezVersion = .some(await host.bluezVersion()) }
        return (state, advertising, host?.adapter, bluezVersion ?? nil)
    }

    /// Starts advertising the profile's advertisement, or stops. Throws `.failed` with the manager's reason.
    public func setAdvertising(_ isOn: Bool) async throws(ControlError) {
        guard let manager else { throw .failed("the emulator is not running") }
        do {
            if isOn {
                try await manager.startAdvertising(profile.advertisement)
            } else {
                try await manager.stopAdvertising()
            }
        } catch { throw .failed(error.description) }
    }
}

/// Why a control command failed: sent back as `{"ok":false,"error":"..."}`.
public enum ControlError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No characteristic has this id.
    case unknownCharacteristic(String)
    /// The value or an argument is not acceptable.
    case badValue(String)
    /// The request is not a JSON object with a known `command`.
    case badRequest(String)
    /// The peripheral refused.
    case failed(String)

    /// The message the client sees.
    public var description: String {
        switch self {
        case .unknownCharacteristic(let id): "unknown characteristic `\(id)`"
        case .badValue(let message), .badRequest(let message), .failed(let message): message
        }
    }
}
