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
                return writes.isEmpty ? nil : Self.apply(writes[0], to: &values, dryRun: dryRun)
            }
            var staged = values
            for write in writes {
                if let error = Self.apply(write, to: &staged, dryRun: false) { return error }
            }
            if !dryRun { values = staged }
            return nil
        }
    }

    /// Validates one write against `values` and stores it there unless `dryRun`; returns its error.
    private static func apply(_ write: WriteRequest, to values: inout [String: [UInt8]], dryRun: Bool) -> ATTError? {
        // The characteristic is read in place, never copied out: a copy retains each of its fields.
        if write.characteristic.value.isCached { return .writeNotPermitted }
        // A characteristic written before (nearly every write) is hashed once: its index stores the new value.
        let index = values.index(forKey: write.characteristic.id)
        switch write.applied(to: index.map { values.values[$0] } ?? write.characteristic.value.bytes) {
        case .success(let value):
            guard !dryRun else { return nil }
            if let index { values.values[index] = value } else { values[write.characteristic.id] = value }
            return nil
        case .failure(let error): return error
        }
    }

    /// Every value set so far, by characteristic id (for state restoration and the control socket).
    public var snapshot: [String: [UInt8]] { values.withLock { $0 } }
}
