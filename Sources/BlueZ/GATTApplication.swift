import BlueZModel
import DBus
import GATTModel

/// The D-Bus objects of a GATT application (5.66:doc/gatt-api.txt, "GATT Service/Characteristic/Descriptor
/// Hierarchy"): one GattService1 per service, GattCharacteristic1 and GattDescriptor1 below it, at `ObjectPaths`.
///
/// bluetoothd reads the whole tree once through `GetManagedObjects` while `RegisterApplication` is pending
/// (`client_ready_cb` -> `create_services`) and ignores later InterfacesAdded, so the tree is built whole and
/// never edited in place: a change means unregister, export a new tree, register again.
struct GATTApplication {
    /// One exported object.
    struct Object {
        var path: ObjectPath
        var interfaces: [Interface]
    }

    /// What a characteristic's or descriptor's methods call; the backend implements it.
    struct Handlers: Sendable {
        var read: @Sendable (consuming MethodCall, Characteristic) -> Void
        var write: @Sendable (consuming MethodCall, Characteristic) -> Void
        var startNotify: @Sendable (consuming MethodCall, Characteristic) -> Void
        var stopNotify: @Sendable (consuming MethodCall, Characteristic) -> Void
        var confirm: @Sendable (consuming MethodCall, Characteristic) -> Void
        var acquireNotify: @Sendable (consuming MethodCall, Characteristic) -> Void
        var acquireWrite: @Sendable (consuming MethodCall, Characteristic) -> Void
        var isNotifying: @Sendable (String) -> Bool
        var isNotifyAcquired: @Sendable (String) -> Bool
        var isWriteAcquired: @Sendable (String) -> Bool
        var readDescriptor: @Sendable (consuming MethodCall, ObjectPath, Descriptor) -> Void
        var writeDescriptor: @Sendable (consuming MethodCall, ObjectPath, Descriptor) -> Void
    }

    /// The objects for `services`, in declaration (handle) order.
    static func objects(
        for services: [Service], paths: ObjectPaths, options: BlueZOptions, handlers: Handlers
    ) -> [Object] {
        var objects: [Object] = []
        let servicePaths = Dictionary(
            services.enumerated().map { ($0.element.id, paths.service($0.offset)) },
            uniquingKeysWith: { first, _ in first })
        for (s, service) in services.enumerated() {
            let servicePath = paths.service(s)
            let includes = service.includedServiceIDs.compactMap { servicePaths[$0] }
            let characteristicPaths = service.characteristics.indices.map {
                paths.characteristic($0, service: s)
            }
            objects.append(
                Object(
                    path: servicePath,
                    interfaces: [
                        Interface(
                            BlueZName.Interface.gattService,
                            properties: [
                                constant(BlueZName.Property.uuid, .string(service.uuid.fullString)),
                                constant(BlueZName.Property.primary, .boolean(service.isPrimary)),
                                constant(
                                    BlueZName.Property.includes,
                                    .array(element: "o", includes.map(DBusValue.objectPath))),
                                constant(
                                    BlueZName.Property.characteristics,
                                    .array(element: "o", characteristicPaths.map(DBusValue.objectPath))),
                            ])
                    ]))
            for (c, characteristic) in service.characteristics.enumerated() {
                let path = characteristicPaths[c]
                let descriptorPaths = characteristic.descriptors.indices.map {
                    paths.descriptor($0, characteristic: c, service: s)
                }
                objects.append(
                    Object(
                        path: path,
                        interfaces: [
                            characteristicInterface(
                                characteristic, service: servicePath, descriptors: descriptorPaths,
                                options: options, handlers: handlers)
                        ]))
                for (d, descriptor) in characteristic.descriptors.enumerated() {
                    objects.append(
                        Object(
                            path: descriptorPaths[d],
                            interfaces: [
                                descriptorInterface(
                                    descriptor, at: descriptorPaths[d], characteristic: path, handlers: handlers)
                            ]))
                }
            }
        }
        return objects
    }

    /// Whether a characteristic offers `AcquireNotify`: only when it notifies or indicates.
    static func offersAcquireNotify(_ characteristic: Characteristic, options: BlueZOptions) -> Bool {
        options.useAcquireNotify && !characteristic.properties.isDisjoint(with: .anyUpdate)
    }

    /// Whether a characteristic offers `AcquireWrite`: only when it takes Write Without Response and nothing that
    /// carries an offset or expects an answer. 5.66 sends every write to an acquired characteristic down the
    /// socket with success already answered (`chrc_write_cb`), offsets dropped; on a write-without-response
    /// characteristic it answers Write Requests itself anyway (`send_write` without an owner queue), so only the
    /// offset of a prepared write could be lost, hence no `write` or `reliable-write`.
    static func offersAcquireWrite(_ characteristic: Characteristic, options: BlueZOptions) -> Bool {
        options.useAcquireWrite && characteristic.properties.contains(.writeWithoutResponse)
            && characteristic.properties.isDisjoint(with: [.write, .reliableWrite])
    }

    private static func characteristicInterface(
        _ characteristic: Characteristic, service: ObjectPath, descriptors: [ObjectPath], options: BlueZOptions,
        handlers: Handlers
    ) -> Interface {
        let id = characteristic.id
        var properties = [
            constant(BlueZName.Property.uuid, .string(characteristic.uuid.fullString)),
            constant(BlueZName.Property.service, .objectPath(service)),
            constant(BlueZName.Property.flags, .strings(characteristic.bluezFlags.map(\.rawValue))),
            constant(BlueZName.Property.descriptors, .array(element: "o", descriptors.map(DBusValue.objectPath))),
            Property(BlueZName.Property.notifying, signature: "b", get: { .boolean(handlers.isNotifying(id)) }),
        ]
        var methods = [
            Method(
                "ReadValue", inputs: "a{sv}", outputs: "ay", decoding: .inPlace,
                immediate: { handlers.read($0, characteristic) }),
            Method(
                "WriteValue", inputs: "aya{sv}", decoding: .inPlace, immediate: { handlers.write($0, characteristic) }),
            Method("StartNotify", immediate: { handlers.startNotify($0, characteristic) }),
            Method("StopNotify", immediate: { handlers.stopNotify($0, characteristic) }),
            Method("Confirm", immediate: { handlers.confirm($0, characteristic) }),
        ]
        // bluetoothd only looks for the property's presence (`ccc_write_cb`: g_dbus_proxy_get_property), so it is
        // exported exactly for the characteristics whose AcquireNotify we serve.
        if offersAcquireNotify(characteristic, options: options) {
            properties.append(
                Property(
                    BlueZName.Property.notifyAcquired, signature: "b", get: { .boolean(handlers.isNotifyAcquired(id)) })
            )
            methods.append(
                Method(
                    "AcquireNotify", inputs: "a{sv}", outputs: "hq", decoding: .inPlace,
                    immediate: { handlers.acquireNotify($0, characteristic) }))
        }
        // Likewise `WriteAcquired`: its presence alone makes 5.66 call AcquireWrite (`chrc_write_cb`).
        if offersAcquireWrite(characteristic, options: options) {
            properties.append(
                Property(
                    BlueZName.Property.writeAcquired, signature: "b", get: { .boolean(handlers.isWriteAcquired(id)) }))
            methods.append(
                Method(
                    "AcquireWrite", inputs: "a{sv}", outputs: "hq", decoding: .inPlace,
                    immediate: { handlers.acquireWrite($0, characteristic) }))
        }
        return Interface(BlueZName.Interface.gattCharacteristic, methods: methods, properties: properties)
    }

    private static func descriptorInterface(
        _ descriptor: Descriptor, at path: ObjectPath, characteristic: ObjectPath, handlers: Handlers
    ) -> Interface {
        Interface(
            BlueZName.Interface.gattDescriptor,
            methods: [
                Method(
                    "ReadValue", inputs: "a{sv}", outputs: "ay", decoding: .inPlace,
                    immediate: { handlers.readDescriptor($0, path, descriptor) }),
                Method(
                    "WriteValue", inputs: "aya{sv}", decoding: .inPlace,
                    immediate: { handlers.writeDescriptor($0, path, descriptor) }),
            ],
            properties: [
                constant(BlueZName.Property.uuid, .string(descriptor.uuid.fullString)),
                constant(BlueZName.Property.characteristic, .objectPath(characteristic)),
                constant(BlueZName.Property.flags, .strings(descriptor.bluezFlags.map(\.rawValue))),
            ])
    }

    private static func constant(_ name: String, _ value: DBusValue) -> Property {
        Property(name, signature: value.signature, get: { value })
    }
}
