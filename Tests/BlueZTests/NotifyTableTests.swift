@_spi(Backend) import Peripheral
import Testing

@testable import BlueZ

/// Who a subscription's updates reach, in the orders bluetoothd 5.66 and 5.82 call the application (the lab's
/// ProfilesScenario two-centrals story shows the same on real bluetoothd).
struct NotifyTableTests {
    private let hci1 = "/org/bluez/hci0/dev_00_AA_01_01_00_01"
    private let hci2 = "/org/bluez/hci0/dev_00_AA_01_02_00_02"
    private let all = Central(id: Central.allSubscribersID)

    @Test func bluez566sOneAcquireNotifyServesEverySubscriberAsStar() {
        var table = NotifyTable()
        let effects = table.acquired("temperature", device: hci1, mtu: 517, kind: .notification, token: 0)
        #expect(effects == [.subscribed(all, characteristicID: "temperature", kind: .notification)])
        #expect(table.route("temperature", to: all) == .socket(token: 0))
        #expect(table.central(for: 0)?.maximumUpdateValueLength == 512)
        #expect(!table.socketsArePerDevice)
        // The last subscriber leaves: bluetoothd closes the one socket.
        #expect(table.closed(token: 0) == [.unsubscribed(all, characteristicID: "temperature"), .close(token: 0)])
        #expect(!table.isNotifying("temperature"))
    }

    @Test func aSecondDevicesAcquireNotifyShowsSocketsArePerDeviceAndMovesTheFirstToItsDevice() {
        var table = NotifyTable()
        _ = table.acquired("temperature", device: hci1, mtu: 517, kind: .notification, token: 0)
        _ = table.acquired("humidity", device: hci1, mtu: 517, kind: .notification, token: 1)
        let effects = table.acquired("temperature", device: hci2, mtu: 23, kind: .notification, token: 2)
        let first = Central(id: hci1, attMTU: 517)
        let second = Central(id: hci2, attMTU: 23)
        #expect(
            effects == [
                .unsubscribed(all, characteristicID: "humidity"),
                .subscribed(first, characteristicID: "humidity", kind: .notification),
                .unsubscribed(all, characteristicID: "temperature"),
                .subscribed(first, characteristicID: "temperature", kind: .notification),
                .subscribed(second, characteristicID: "temperature", kind: .notification),
            ])
        #expect(table.socketsArePerDevice)
        #expect(table.route("temperature", to: first) == .socket(token: 0))
        #expect(table.route("temperature", to: second) == .socket(token: 2))
        #expect(table.central(for: 2)?.maximumUpdateValueLength == 20)
        // Nobody is "*" any more: an update for it has nowhere to go.
        if case .none = table.route("temperature", to: all) {} else { Issue.record("* still routed") }
        // A later characteristic's first AcquireNotify is its device's straight away.
        #expect(
            table.acquired("battery", device: hci2, mtu: 23, kind: .indication, token: 3) == [
                .subscribed(second, characteristicID: "battery", kind: .indication)
            ])
    }

    @Test func oneDeviceLeavingEndsOnlyItsSubscription() {
        var table = NotifyTable()
        _ = table.acquired("temperature", device: hci1, mtu: 517, kind: .notification, token: 0)
        _ = table.acquired("temperature", device: hci2, mtu: 517, kind: .notification, token: 1)
        let first = Central(id: hci1, attMTU: 517)
        #expect(table.closed(token: 0) == [.unsubscribed(first, characteristicID: "temperature"), .close(token: 0)])
        #expect(table.isNotifying("temperature"))
        #expect(table.central(for: 0) == nil)
        #expect(table.route("temperature", to: Central(id: hci2)) == .socket(token: 1))
    }

    @Test func theSameDeviceAcquiringAgainReplacesItsSocketWithoutANewSubscription() {
        var table = NotifyTable()
        _ = table.acquired("temperature", device: hci1, mtu: 517, kind: .notification, token: 0)
        #expect(
            table.acquired("temperature", device: hci1, mtu: 517, kind: .notification, token: 1) == [.close(token: 0)])
        #expect(table.route("temperature", to: all) == .socket(token: 1))
        #expect(!table.socketsArePerDevice)
    }

    @Test func startNotifyIsStarUntilStopNotifyAndIsNeverAcquired() {
        var table = NotifyTable()
        #expect(
            table.started("level", kind: .indication) == [
                .subscribed(all, characteristicID: "level", kind: .indication)
            ])
        #expect(table.started("level", kind: .indication).isEmpty)
        #expect(table.route("level", to: all) == .properties)
        #expect(!table.isAcquired("level"))
        #expect(table.stopped("level") == [.unsubscribed(all, characteristicID: "level")])
    }

    @Test func aNewBluetoothdIsNotAssumedToBeTheSameVersion() {
        var table = NotifyTable()
        _ = table.acquired("temperature", device: hci1, mtu: 517, kind: .notification, token: 0)
        _ = table.acquired("temperature", device: hci2, mtu: 517, kind: .notification, token: 1)
        let ended = table.removeAll(keepingWhatWasLearned: false)
        #expect(ended.filter { if case .close = $0 { true } else { false } }.count == 2)
        #expect(!table.socketsArePerDevice)
        #expect(
            table.acquired("temperature", device: hci1, mtu: 517, kind: .notification, token: 2) == [
                .subscribed(all, characteristicID: "temperature", kind: .notification)
            ])
    }
}
