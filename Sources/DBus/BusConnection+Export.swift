/// Exporting objects: the tree, ObjectManager roots, and the signals that announce changes.
extension BusConnection {
    /// Publishes an object with its interfaces (replacing none: exporting a path twice is an `ExportError`).
    /// If an ObjectManager root lies above it, that root emits `InterfacesAdded`. Throws `ExportError` for an
    /// invalid path, name or signature, or duplicate interface, method or property names.
    public func export(_ path: ObjectPath, _ interfaces: [Interface]) throws(ExportError) {
        try Self.check(path, interfaces)
        let announcer: ObjectPath? = try core.tree.withLock { tree throws(ExportError) in
            guard tree.objects[path] == nil else { throw ExportError("\(path) is already exported") }
            tree.objects[path] = interfaces
            return tree.manager(announcing: path)
        }
        core.logger.debug("exported", metadata: ["path": "\(path)", "interfaces": "\(interfaces.map(\.name))"])
        if let announcer {
            emitManagerSignal(
                from: announcer, "InterfacesAdded",
                [.objectPath(path), core.interfacesAndProperties(interfaces, at: path)])
        }
    }

    /// Withdraws an object; its ObjectManager root (if any) emits `InterfacesRemoved`. Unknown paths are ignored.
    public func unexport(_ path: ObjectPath) {
        let removed: ([Interface], ObjectPath?)? = core.tree.withLock { tree in
            guard let interfaces = tree.objects.removeValue(forKey: path) else { return nil }
            return (interfaces, tree.manager(announcing: path))
        }
        guard let (interfaces, announcer) = removed else { return }
        core.logger.debug("unexported", metadata: ["path": "\(path)"])
        if let announcer {
            emitManagerSignal(from: announcer, "InterfacesRemoved", [.objectPath(path), .strings(interfaces.map(\.name))])
        }
    }

    /// Makes `root` an `org.freedesktop.DBus.ObjectManager` whose GetManagedObjects lists every exported object
    /// strictly below it. Throws `ExportError` for an invalid path.
    public func addObjectManager(at root: ObjectPath) throws(ExportError) {
        guard root.isValid else { throw ExportError("invalid object path '\(root)'") }
        _ = core.tree.withLock { $0.managers.insert(root) }
    }

    /// Removes the ObjectManager at `root` (its objects stay exported).
    public func removeObjectManager(at root: ObjectPath) {
        _ = core.tree.withLock { $0.managers.remove(root) }
    }

    /// Emits a signal from one of our objects; throws `MarshalError` for invalid names or arguments.
    public func emitSignal(
        path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = []
    ) throws(MarshalError) {
        let signal = try Message.signal(path: path, interface: interface, member: member)
        try signal.append(arguments)
        core.emit(signal)
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` with the given new values (and names whose
    /// values are only invalidated). Throws `MarshalError` for invalid names or values.
    public func emitPropertiesChanged(
        path: ObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String] = []
    ) throws(MarshalError) {
        try emitSignal(
            path: path, interface: ObjectTree.Standard.properties, member: "PropertiesChanged",
            arguments: [.string(interface), .vardict(changed), .strings(invalidated)])
    }

    /// Emits `PropertiesChanged` for the named properties with their current values, read through their getters.
    /// Throws `DBusError` (`UnknownObject`/`UnknownInterface`/`UnknownProperty`) for names not exported, or the
    /// getter's error.
    public func emitPropertiesChanged(path: ObjectPath, interface: String, properties names: [String]) throws {
        let found: Interface? = core.tree.withLock { $0.objects[path]?.first { $0.name == interface } }
        guard let found else {
            throw DBusError(name: StandardErrorName.unknownInterface, message: "no interface \(interface) at \(path)")
        }
        var changed: [String: DBusValue] = [:]
        for name in names {
            guard let property = found.properties.first(where: { $0.name == name }) else {
                throw DBusError(name: StandardErrorName.unknownProperty, message: "no property \(interface).\(name)")
            }
            changed[name] = try core.read(property, at: path, interface)
        }
        try emitPropertiesChanged(path: path, interface: interface, changed: changed)
    }

    private func emitManagerSignal(from root: ObjectPath, _ member: String, _ arguments: [DBusValue]) {
        do {
            try emitSignal(path: root, interface: ObjectTree.Standard.objectManager, member: member, arguments: arguments)
        } catch {
            core.logger.error("\(member) not sent", metadata: ["error": "\(error)"])
        }
    }

    private static func check(_ path: ObjectPath, _ interfaces: [Interface]) throws(ExportError) {
        func check(_ body: () throws(MarshalError) -> Void) throws(ExportError) {
            do { try body() } catch { throw ExportError("\(path): \(error)") }
        }
        func checkSignature(_ signature: Signature, single: Bool = false) throws(ExportError) {
            guard single ? signature.isSingleCompleteType : signature.isValid else {
                throw ExportError("\(path): invalid signature '\(signature)'")
            }
        }
        try check { () throws(MarshalError) in try Names.checkPath(path) }
        var interfaceNames = Set<String>()
        for interface in interfaces {
            try check { () throws(MarshalError) in try Names.checkInterface(interface.name) }
            guard interfaceNames.insert(interface.name).inserted else {
                throw ExportError("\(path): interface \(interface.name) listed twice")
            }
            var members = Set<String>()
            for method in interface.methods {
                try check { () throws(MarshalError) in try Names.checkMember(method.name) }
                try checkSignature(method.inputs)
                try checkSignature(method.outputs)
                guard members.insert(method.name).inserted else {
                    throw ExportError("\(path): \(interface.name).\(method.name) listed twice")
                }
            }
            var properties = Set<String>()
            for property in interface.properties {
                try check { () throws(MarshalError) in try Names.checkMember(property.name) }
                try checkSignature(property.signature, single: true)
                guard properties.insert(property.name).inserted else {
                    throw ExportError("\(path): property \(interface.name).\(property.name) listed twice")
                }
            }
            for signal in interface.signals {
                try check { () throws(MarshalError) in try Names.checkMember(signal.name) }
                try checkSignature(signal.signature)
            }
        }
    }
}
