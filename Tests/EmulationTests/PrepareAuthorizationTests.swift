import Emulation
import GATTModel
import Logging
@_spi(Backend) import Peripheral
import PeripheralTesting
import Testing

/// BlueZ 5.66's `prepare-authorize` asks with no bytes (src/shared/gatt-server.c `prep_write_cb` hands gatt-db a
/// NULL value), so the write rules must not judge that empty value: only the offset can be refused.
@Suite struct PrepareAuthorizationTests {
    private func answer(
        _ writes: [WriteRequest], isAuthorizationOnly: Bool, on emulator: Emulator, atOnce: Bool
    ) async -> Result<[UInt8], ATTError>? {
        let (replies, sink) = AsyncStream.makeStream(of: Result<[UInt8], ATTError>.self)
        let requests = WriteRequests(
            central: Central(id: "central", attMTU: 23), requests: writes, linkSecurity: .encrypted,
            expectsResponse: true, isAuthorizationOnly: isAuthorizationOnly,
            responder: Responder(
                summary: "test write", reply: ClosureReply { sink.yield($0) }, ledger: RequestLedger(),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })))
        if atOnce {
            // Nothing here makes the handler wait (no delaying fault, no handler program, no state file).
            switch emulator.handler.answerAtOnce(requests) {
            case .none: break
            case .some(let handedBack):
                Issue.record("a batch nothing makes wait was handed back")
                await emulator.handler.handleWrites(handedBack)
            }
        } else {
            await emulator.handler.handleWrites(requests)
        }
        var iterator = replies.makeAsyncIterator()
        return await iterator.next()
    }

    /// Both ways in: `answerAtOnce`, which the router offers every batch first, and `handleWrites`.
    @Test(arguments: [true, false])
    func anEmptyAuthorizationIsAcceptedWhereTheRulesWouldRefuseAnEmptyValueAndStoresNothing(
        atOnce: Bool
    ) async throws {
        let profile = try bundledProfile("thermostat")
        let setPoint = try #require(
            profile.services.flatMap(\.characteristics).first { $0.id == "set-point" }, "thermostat's set-point")
        let server = ProfileServer(store: ValueStore())
        let emulator = try Emulator(profile: profile, server: server, clock: ManualClock())
        let empty = WriteRequest(characteristic: setPoint, offset: 0, value: [])
        #expect(await answer([empty], isAuthorizationOnly: true, on: emulator, atOnce: atOnce) == .success([]))
        #expect(server.store.value(of: setPoint) == setPoint.value.bytes)
        // The same empty value written for real fails the set point's range rule.
        #expect(
            await answer([empty], isAuthorizationOnly: false, on: emulator, atOnce: atOnce)
                == .failure(ATTError(rawValue: 0x80)))
        let pastTheEnd = WriteRequest(characteristic: setPoint, offset: setPoint.maximumLength + 1, value: [])
        #expect(
            await answer([pastTheEnd], isAuthorizationOnly: true, on: emulator, atOnce: atOnce)
                == .failure(.invalidOffset))
    }
}
