// The simulated central's writes: a test writes as a remote device would, and the app under test gets what
// bluetoothd 5.66 sends it for a Write Request, a Write Command and a long or reliable write (src/shared/gatt-server.c
// `write_cb`, `prep_write_cb`, `store_prep_data`, `exec_write_cb`; src/gatt-database.c `chrc_write_cb`,
// `send_write`, `write_reply_cb`, `acquire_write_reply`).
import DBus
import GATTModel

#if canImport(Glibc)
import Glibc
#endif

/// A request refused with an ATT error, and the attribute the Error Response names.
public struct RefusedRequest: Sendable, Hashable {
    /// The ATT error the central received.
    public var code: ATTError
    /// The handle's attribute; nil where bluetoothd names handle 0.
    public var attribute: AttributeReference?

    /// A refusal with `code`, naming `attribute`.
    public init(_ code: ATTError, _ attribute: AttributeReference?) {
        self.code = code
        self.attribute = attribute
    }
}

extension FakeBluetoothd {
    /// One entry of a device's prepare queue (`struct prep_write_data`).
    struct QueuedWrite {
        var write: PreparedWrite
        var path: ObjectPath
        var isReliable: Bool
    }

    /// A Write Request (`withResponse`) or Write Command. A characteristic with `write-without-response` gets
    /// WriteValue flagged no-reply and the central an immediate success, even for a Write Request (5.66
    /// `send_write` with no owner queue). A Write Command's error never reaches the central: nil is returned.
    public func write(
        _ attribute: AttributeReference, _ value: [UInt8], withResponse: Bool = true, by central: FakeCentral
    ) async -> ATTError? {
        await beginRequest(central)
        defer { endRequest(central) }
        // `check_length` in 5.66 counts the 2-byte handle: 511 and 512 bytes get 0x0D (fixed in 5.69, 8bf3a4a26).
        if 2 + value.count > 512 { return withResponse ? .invalidAttributeValueLength : nil }
        let result = await writeValue(attribute, value, offset: 0, prepareAuthorize: false, by: central)
        return withResponse ? result : nil
    }

    /// A Prepare Write Request, as 5.66's `prep_write_cb` and `store_prep_data` take it: the queue holds at most 30
    /// entries (0x09), counted after merging, so one long write never fills it; `check_length` counts the PDU's 4
    /// header bytes (a part ending past byte 508 gets 0x0D; fixed in 5.69 by 8bf3a4a26); the permission check; with
    /// `authorize`, an untrusted device's first part for a characteristic goes to the app as
    /// `WriteValue([], {offset, prepare-authorize})`: no bytes, the part's value is not passed. A part contiguous
    /// with the queue's last entry for the same handle merges into it. A refused part leaves the queue as it was.
    public func prepare(_ write: PreparedWrite, by central: FakeCentral) async -> ATTError? {
        await beginRequest(central)
        defer { endRequest(central) }
        guard let device = devices[central.path] else { return .unlikelyError }
        guard device.preparedWrites.count < 30 else { return .prepareQueueFull }
        guard let found = find(write.attribute) else { return .invalidHandle }
        if write.offset > 512 { return .invalidOffset }
        if 4 + write.value.count + Int(write.offset) > 512 { return .invalidAttributeValueLength }
        if let error = FakeATT.check(found.parsed.permissions, for: .write, at: device.security) { return error }
        if found.parsed.requiresPrepareAuthorization, !device.isTrusted,
            !device.prepareAuthorized.contains(found.path)
        {
            if let error = await writeValue(
                write.attribute, [], offset: write.offset, prepareAuthorize: true, by: central)
            {
                return error
            }
            devices[central.path]?.prepareAuthorized.insert(found.path)
        }
        if let last = devices[central.path]?.preparedWrites.last, last.path == found.path,
            Int(last.write.offset) + last.write.value.count == Int(write.offset)
        {
            devices[central.path]?.preparedWrites[device.preparedWrites.count - 1].write.value += write.value
        } else {
            // `is_reliable_write_supported`: the extended properties of the characteristic declaration.
            let isReliable = found.characteristic != nil && found.parsed.extendedProperties & 0x01 != 0
            devices[central.path]?.preparedWrites.append(
                QueuedWrite(write: write, path: found.path, isReliable: isReliable))
        }
        return nil
    }

    /// An Execute Write Request, as 5.66's `exec_write_cb` and `exec_next_prep_write` answer it: `write` false
    /// cancels the queue; more than one entry is a reliable write, and every entry's characteristic needs
    /// `reliable-write` (else 0x06 naming the first that lacks it, nothing written); then one WriteValue per entry
    /// in order, stopping at the first error, which names that entry. Earlier entries stay written; the queue is
    /// empty afterwards either way.
    public func execute(write: Bool = true, by central: FakeCentral) async -> RefusedRequest? {
        await beginRequest(central)
        defer { endRequest(central) }
        guard let queue = devices[central.path]?.preparedWrites else { return RefusedRequest(.unlikelyError, nil) }
        devices[central.path]?.preparedWrites = []
        devices[central.path]?.prepareAuthorized = []
        guard write else { return nil }
        if queue.count > 1, let unreliable = queue.first(where: { !$0.isReliable }) {
            return RefusedRequest(.requestNotSupported, unreliable.write.attribute)
        }
        for entry in queue {
            if let error = await writeValue(
                entry.write.attribute, entry.write.value, offset: entry.write.offset, prepareAuthorize: false,
                by: central)
            {
                return RefusedRequest(error, entry.write.attribute)
            }
        }
        return nil
    }

    /// A long or reliable write as a central performs it: every part prepared, then Execute Write; a refused part
    /// cancels the queue (Execute Write with flags 0) and is the answer.
    public func prepareAndExecute(_ writes: [PreparedWrite], by central: FakeCentral) async -> ATTError? {
        for write in writes {
            if let error = await prepare(write, by: central) {
                _ = await execute(write: false, by: central)
                return error
            }
        }
        return await execute(by: central)?.code
    }

    private func writeValue(
        _ attribute: AttributeReference, _ value: [UInt8], offset: UInt16, prepareAuthorize: Bool,
        by central: FakeCentral
    ) async -> ATTError? {
        guard let device = devices[central.path] else { return .unlikelyError }
        guard let found = find(attribute) else { return .invalidHandle }
        if let error = FakeATT.check(found.parsed.permissions, for: .write, at: device.security) { return error }
        var options = options(for: device, central.path, offset: offset)
        if prepareAuthorize, case .dictionary(let key, let type, var entries) = options {
            entries.append(.init(.string("prepare-authorize"), .variant(.boolean(true))))
            options = .dictionary(key: key, value: type, entries)
        }
        if !prepareAuthorize, let characteristic = found.characteristic, characteristic.offersAcquireWrite {
            return await streamWrite(value, to: found, options: options)
        }
        let arguments: [DBusValue] = [.bytes(value), options]
        if found.parsed.properties.contains(.writeWithoutResponse) {
            callAppWithoutReply(found.owner, found.path, found.interface, "WriteValue", arguments)
            return nil
        }
        do {
            _ = try await callApp(found.owner, found.path, found.interface, "WriteValue", arguments)
            return nil
        } catch let error as DBusError {
            return FakeATT.code(forErrorNamed: error.name, message: error.message, on: .write)
        } catch {
            return .unlikelyError
        }
    }

    /// `chrc_write_cb` on a characteristic with `WriteAcquired`: the value goes down the write socket (acquired
    /// on the first write, `acquire_write_reply`) and the central gets success without the app being asked. An
    /// AcquireWrite error other than Unlikely Error is the central's answer; otherwise 5.66 falls back to
    /// WriteValue (`flush_pending_writes`). A send on a socket the app closed answers Unlikely Error.
    private func streamWrite(_ value: [UInt8], to found: FoundAttribute, options: DBusValue) async -> ATTError? {
        if writeStreams[found.path] == nil {
            do {
                let reply = try await callApp(found.owner, found.path, found.interface, "AcquireWrite", [options])
                guard reply.count == 2, case .unixFD(let fd) = reply[0], case .uint16 = reply[1] else {
                    return await fallBackToWriteValue(value, found, options)
                }
                writeStreams[found.path] = fd.rawValue
            } catch let error as DBusError {
                let code = FakeATT.code(forErrorNamed: error.name, message: error.message, on: .write)
                if code != .unlikelyError { return code }
                return await fallBackToWriteValue(value, found, options)
            } catch {
                return await fallBackToWriteValue(value, found, options)
            }
        }
        guard let fd = writeStreams[found.path] else { return .unlikelyError }
        let sent = value.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent >= 0 else {
            // `sock_hup` would have destroyed the io by now; the next write acquires again.
            close(fd)
            writeStreams[found.path] = nil
            return .unlikelyError
        }
        return nil
    }

    private func fallBackToWriteValue(
        _ value: [UInt8], _ found: FoundAttribute, _ options: DBusValue
    ) async
        -> ATTError?
    {
        callAppWithoutReply(found.owner, found.path, found.interface, "WriteValue", [.bytes(value), options])
        return nil
    }

    /// Whether bluetoothd holds a write socket for the characteristic (`chrc->write_io`).
    public func hasWriteStream(_ attribute: AttributeReference) -> Bool {
        guard let path = find(attribute)?.path else { return false }
        return writeStreams[path] != nil
    }
}
