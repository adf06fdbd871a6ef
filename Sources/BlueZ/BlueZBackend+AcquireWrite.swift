import BlueZAgent
import BlueZModel
import DBus
import GATTModel
import Glibc
@_spi(Backend) import Peripheral

// `AcquireWrite` (5.66:src/gatt-database.c `chrc_write_cb`, `acquire_write`, `acquire_write_reply`): offered only
// when `BlueZOptions.useAcquireWrite` is on, for write-without-response characteristics (see
// `GATTApplication.offersAcquireWrite`). bluetoothd calls it on the first write, holds the writes that arrive
// meanwhile, then sends each write's value as one datagram and answers the central itself.
extension BlueZBackend {
    /// The biggest datagram bluetoothd can send: a Write Command carries at most ATT_MTU - 3 = 514 bytes.
    static let writeDatagramLimit = 517 - 3

    nonisolated func acquireWrite(_ call: consuming MethodCall, _ characteristic: Characteristic) {
        guard let call = owner.admit(call) else { return }
        let options = requestOptions(call)
        remember(options)
        let pair: (local: Int32, remote: Int32)
        do { pair = try AcquiredSocket.makePair() } catch {
            logger.error("AcquireWrite on \(characteristic.id): \(error)")
            call.fail(BlueZName.Error.failed, "\(error)")
            return
        }
        let id = characteristic.id
        // Every central's writes share this socket (5.66 keeps one `write_io` per characteristic), so they are
        // attributed to no central in particular; the MTU is the first writer's.
        let central = Central(id: Central.allSubscribersID, attMTU: options.mtu)
        let security = linkSecurity(characteristic, .write)
        let requestLogger = requestLogger
        let socket = AcquiredSocket(
            fd: pair.local, on: connection, datagramLimit: Self.writeDatagramLimit,
            onDatagram: { [weak self] value in
                requestLogger?.debug(
                    "write \(id) by \(central.id) offset 0 \(Self.hex(value)) (streamed, no reply expected)")
                // The loop thread reads the datagrams one by one, so writes reach the handler in order.
                self?.deliver(
                    IncomingWrites(
                        central: central, writes: [IncomingWrites.Write(characteristicID: id, value: value)],
                        linkSecurity: security, errorDelivery: .throughBlueZ, reply: nil))
            },
            onClosed: { [weak self] in self?.onLoop { $0.writeStreamClosed(id) } })
        onLoop { $0.writeStreams.setWrite(socket, for: id) }?.close()
        call.reply([.unixFD(UnixFD(pair.remote)), .uint16(UInt16(clamping: options.mtu))])
        _ = Glibc.close(pair.remote)
        logger.info("\(id): AcquireWrite by \(options.device), MTU \(options.mtu); writes now stream through a socket")
        onLoop { $0.writeAcquiredChanged(id) }
    }

    /// Closes every write stream (re-registration, power-off, bluetoothd gone, shutdown): bluetoothd acquires
    /// again on the next write.
    func closeWriteStreams(reason: String) {
        for (id, socket) in writeStreams.removeWrites() {
            socket.close()
            logger.info("\(id): write stream closed (\(reason))")
        }
    }

    private func writeStreamClosed(_ id: String) {
        guard writeStreams.removeWrite(id) != nil else { return }
        logger.info("\(id): bluetoothd closed the write stream")
        writeAcquiredChanged(id)
    }

    /// Emits `PropertiesChanged` for `WriteAcquired`; failures are logged.
    private func writeAcquiredChanged(_ id: String) {
        guard let path = tree.characteristicPath(id) else { return }
        let isAcquired = writeStreams.isWriteAcquired(id)
        do {
            try connection.emitPropertiesChanged(
                path: path, interface: BlueZName.Interface.gattCharacteristic,
                changed: [BlueZName.Property.writeAcquired: .boolean(isAcquired)])
        } catch {
            logger.debug("PropertiesChanged for \(id) not sent: \(error)")
        }
    }
}
