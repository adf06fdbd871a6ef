import DBus
import GATTModel

/// The GATT application as it is exported: the services, every object path exported for them (the next tree
/// unexports them), and each characteristic's path by id (where `Notifying`, `NotifyAcquired` and `WriteAcquired`
/// changes and `PropertiesChanged` notifications go). Replaced whole when a service is published or removed, so
/// the three never disagree.
struct PublishedTree: Sendable {
    /// The published services, in publishing order.
    private(set) var services: [Service] = []
    /// Every object path exported for them.
    private(set) var exported: [ObjectPath] = []
    /// Where each characteristic is exported, by id.
    private var characteristicPaths: [String: ObjectPath] = [:]

    /// No tree: nothing exported.
    init() {}

    /// `services`, exported at `exported`, their characteristics where `paths` puts them
    /// (`GATTApplication.objects`).
    init(_ services: [Service], exported: [ObjectPath], paths: ObjectPaths) {
        self.services = services
        self.exported = exported
        for (s, service) in services.enumerated() {
            for (c, characteristic) in service.characteristics.enumerated() {
                characteristicPaths[characteristic.id] = paths.characteristic(c, service: s)
            }
        }
    }

    /// The path the characteristic of this id is exported at; nil when no published service has it.
    func characteristicPath(_ id: String) -> ObjectPath? { characteristicPaths[id] }
}
