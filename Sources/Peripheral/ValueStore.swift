import GATTModel
import Synchronization

/// The current value of every characteristic: the one place `ProfileServer` reads and writes, and where
/// Emulation sets values before notifying them. Safe to use from any task.
public final class ValueStore: Sendable {
    private let values: Mutex<[String: [UInt8]]>

    /// A store holding these values by characteristic id; characteristics not in it start from their declared value.
    public init(_ values: [String: [UInt8]] = [:]) {
        self.values = Mutex(values)
    }

    /// The current value: the last one set, else the declared one. A cached characteristic always has its
    /// declared value (it is constant, as in Core Bluetooth).
    public func value(of characteristic: Characteristic) -> [UInt8] {
        if characteristic.value.isCached { return characteristic.value.bytes }
        return values.withLock { $0[characteristic.id] } ?? characteristic.value.bytes
    }

    /// Sets a value. Returns false, storing nothing, for a cached (constant) characteristic or a value longer than
    /// `Characteristic.maximumValueLength`, which bluetoothd would truncate.
    @discardableResult
    public func setValue(_ value: [UInt8], for characteristic: Characteristic) -> Bool {
        guard !characteristic.value.isCached, value.count <= Characteristic.maximumValueLength else { return false }
        values.withLock { $0[characteristic.id] = value }
        return true
    }

    /// Applies a batch of writes all or nothing, under one lock so no other write interleaves: validates every
    /// write in order against the values the earlier ones left, then stores them unless `dryRun`. Returns the first
    /// error.
    public func apply(_ writes: [WriteRequest], dryRun: Bool = false) -> ATTError? {
        values.withLock { values in
            // One write, nearly every request, needs no staging: a table per request cost more than the store.
            guard writes.count > 1 else {
                return writes.isEmpty ? nil : Self.apply(writes, at: 0, to: &values, dryRun: dryRun)
            }
            var staged = values
            for index in writes.indices {
                if let error = Self.apply(writes, at: index, to: &staged, dryRun: false) { return error }
            }
            if !dryRun { values = staged }
            return nil
        }
    }

    /// Validates write `index` of `writes` against `values` and stores it there unless `dryRun`; returns its error.
    /// The write is read field by field where it lies: passing it whole copied it out of the array first, retaining
    /// each of its characteristic's fields (Benchmarks/README.md, "The CLI's writes within 1.3x").
    private static func apply(
        _ writes: [WriteRequest], at index: Int, to values: inout [String: [UInt8]], dryRun: Bool
    ) -> ATTError? {
        if writes[index].characteristic.value.isCached { return .writeNotPermitted }
        // A characteristic written before (nearly every write) is hashed once: its index stores the new value.
        let slot = values.index(forKey: writes[index].characteristic.id)
        let result = WriteRequest.applied(
            writes[index].value, at: writes[index].offset, maximumLength: writes[index].characteristic.maximumLength,
            to: slot.map { values.values[$0] } ?? writes[index].characteristic.value.bytes)
        switch result {
        case .success(let value):
            guard !dryRun else { return nil }
            if let slot { values.values[slot] = value } else { values[writes[index].characteristic.id] = value }
            return nil
        case .failure(let error): return error
        }
    }

    /// Every value set so far, by characteristic id (for state restoration and the control socket).
    public var snapshot: [String: [UInt8]] { values.withLock { $0 } }
}
