/// The exported objects of one connection and the ObjectManager roots among them. A value type guarded by the
/// core's `Mutex`: routing takes a copy of what it needs and keeps the last method it found here, under the same
/// lock, and no user code runs while the lock is held.
struct ObjectTree {
    /// Standard interface names (D-Bus Specification, "Standard Interfaces"), spelled only here.
    enum Standard {
        static let introspectable = "org.freedesktop.DBus.Introspectable"
        static let properties = "org.freedesktop.DBus.Properties"
        static let objectManager = "org.freedesktop.DBus.ObjectManager"
        static let peer = "org.freedesktop.DBus.Peer"
    }

    /// The exported objects; any change forgets the last method routed to.
    var objects: [ObjectPath: [Interface]] = [:] { didSet { lastMethod = nil } }
    /// The ObjectManager roots; any change forgets the last method routed to.
    var managers: Set<ObjectPath> = [] { didSet { lastMethod = nil } }
    /// The method the last call was routed to, while the tree is unchanged: a stream of calls to one object (a
    /// central writing a control point, reading one value) routes once. With `CallNames` handing over the last
    /// call's own strings, checking costs a few instructions; routing hashes the path and compares the interface
    /// and method names, about 1,300 a write (Benchmarks/README.md, "The last route kept"). Only a method is kept:
    /// calls to the standard interfaces, and calls that fail, are rare.
    private var lastMethod: RoutedMethod?
    /// The names `lastMethod` was found for.
    private var lastPath = ObjectPath.root
    private var lastInterface: String?
    private var lastMember = ""

    /// The method a call was routed to, boxed once per route found: handing the last route out is then a retain,
    /// not a copy of the method's name, signatures and closure.
    final class RoutedMethod: Sendable {
        let method: Method

        init(_ method: Method) { self.method = method }
    }

    enum Route: Sendable {
        case method(RoutedMethod)
        case introspect
        case getProperty, getAllProperties, setProperty
        case managedObjects
        case failure(name: String, text: String)
    }

    func hasDescendants(_ path: ObjectPath) -> Bool {
        objects.keys.contains { $0.isDescendant(of: path) } || managers.contains { $0.isDescendant(of: path) }
    }

    /// Where a call goes, or the standard error it gets; the last call's method again when the names are its own.
    mutating func route(path: ObjectPath, interface: String?, member: String) -> Route {
        if let lastMethod, lastPath == path, lastInterface == interface, lastMember == member {
            return .method(lastMethod)
        }
        let route = findRoute(path: path, interface: interface, member: member)
        if case .method(let method) = route {
            lastMethod = method
            lastPath = path
            lastInterface = interface
            lastMember = member
        }
        return route
    }

    private func findRoute(path: ObjectPath, interface: String?, member: String) -> Route {
        let interfaces = objects[path]
        // Asked only when needed: a call to one of our own methods finds its object and never hashes the path again.
        var isManager: Bool { managers.contains(path) }
        var exists: Bool { interfaces != nil || isManager }
        // Built only when needed: routing runs for every call, and successful calls need no error text.
        var unknownObject: Route { .failure(name: StandardErrorName.unknownObject, text: "no object at \(path)") }
        var unknownMethod: Route {
            .failure(
                name: StandardErrorName.unknownMethod,
                text: "no method \(member) in \(interface ?? "any interface") at \(path)")
        }
        switch interface {
        case Standard.introspectable?:
            guard exists || hasDescendants(path) else { return unknownObject }
            return member == "Introspect" ? .introspect : unknownMethod
        case Standard.properties?:
            guard exists else { return unknownObject }
            switch member {
            case "Get": return .getProperty
            case "GetAll": return .getAllProperties
            case "Set": return .setProperty
            default: return unknownMethod
            }
        case Standard.objectManager?:
            guard exists else { return unknownObject }
            guard isManager else {
                return .failure(name: StandardErrorName.unknownInterface, text: "no ObjectManager at \(path)")
            }
            return member == "GetManagedObjects" ? .managedObjects : unknownMethod
        case let name?:
            guard exists else { return unknownObject }
            guard let found = interfaces?.first(where: { $0.name == name }) else {
                return .failure(name: StandardErrorName.unknownInterface, text: "no interface \(name) at \(path)")
            }
            guard let method = found.methods.first(where: { $0.name == member }) else { return unknownMethod }
            return .method(RoutedMethod(method))
        case nil:
            // No interface named: the first method of that name wins, then the standard ones.
            for candidate in interfaces ?? [] {
                if let method = candidate.methods.first(where: { $0.name == member }) {
                    return .method(RoutedMethod(method))
                }
            }
            if member == "Introspect" && (exists || hasDescendants(path)) { return .introspect }
            guard exists else { return unknownObject }
            switch member {
            case "Get": return .getProperty
            case "GetAll": return .getAllProperties
            case "Set": return .setProperty
            case "GetManagedObjects" where isManager: return .managedObjects
            default: return unknownMethod
            }
        }
    }

    /// The nearest ObjectManager root strictly above `path` (the one that announces it), if any.
    func manager(announcing path: ObjectPath) -> ObjectPath? {
        managers.filter { path.isDescendant(of: $0) }.max { $0.rawValue.utf8.count < $1.rawValue.utf8.count }
    }

    /// The objects below `root`, sorted by path, with their interfaces.
    func objects(below root: ObjectPath) -> [(ObjectPath, [Interface])] {
        objects.filter { $0.key.isDescendant(of: root) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Introspection XML (D-Bus Specification, "Introspection Data Format") for `path`: its interfaces, the
    /// standard ones it answers, and its direct children as `<node name=".."/>`.
    func introspectionXML(for path: ObjectPath) -> String {
        var xml = """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>

            """
        xml += """
              <interface name="\(Standard.introspectable)">
                <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
              </interface>
              <interface name="\(Standard.peer)">
                <method name="Ping"/>
                <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
              </interface>

            """
        if objects[path] != nil || managers.contains(path) {
            xml += """
                  <interface name="\(Standard.properties)">
                    <method name="Get"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
                    <method name="GetAll"><arg name="interface_name" type="s" direction="in"/><arg name="props" type="a{sv}" direction="out"/></method>
                    <method name="Set"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
                    <signal name="PropertiesChanged"><arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/><arg name="invalidated_properties" type="as"/></signal>
                  </interface>

                """
        }
        if managers.contains(path) {
            xml += """
                  <interface name="\(Standard.objectManager)">
                    <method name="GetManagedObjects"><arg name="objects" type="a{oa{sa{sv}}}" direction="out"/></method>
                    <signal name="InterfacesAdded"><arg name="object" type="o"/><arg name="interfaces" type="a{sa{sv}}"/></signal>
                    <signal name="InterfacesRemoved"><arg name="object" type="o"/><arg name="interfaces" type="as"/></signal>
                  </interface>

                """
        }
        for interface in objects[path] ?? [] {
            xml += "  <interface name=\"\(interface.name)\">\n"
            for method in interface.methods {
                xml += "    <method name=\"\(method.name)\">"
                for (index, type) in method.inputs.completeTypes.enumerated() {
                    xml += "<arg name=\"arg\(index)\" type=\"\(escape(type.rawValue))\" direction=\"in\"/>"
                }
                for (index, type) in method.outputs.completeTypes.enumerated() {
                    xml += "<arg name=\"out\(index)\" type=\"\(escape(type.rawValue))\" direction=\"out\"/>"
                }
                xml += "</method>\n"
            }
            for property in interface.properties {
                let access = property.set == nil ? "read" : "readwrite"
                xml +=
                    "    <property name=\"\(property.name)\" type=\"\(escape(property.signature.rawValue))\" access=\"\(access)\"/>\n"
            }
            for signal in interface.signals {
                xml += "    <signal name=\"\(signal.name)\">"
                for (index, type) in signal.signature.completeTypes.enumerated() {
                    xml += "<arg name=\"arg\(index)\" type=\"\(escape(type.rawValue))\"/>"
                }
                xml += "</signal>\n"
            }
            xml += "  </interface>\n"
        }
        for child in children(of: path) { xml += "  <node name=\"\(child)\"/>\n" }
        xml += "</node>\n"
        return xml
    }

    /// The names of the direct children of `path` that lead to exported objects.
    func children(of path: ObjectPath) -> [String] {
        let prefixCount = path.rawValue == "/" ? 1 : path.rawValue.utf8.count + 1
        var names = Set<String>()
        for candidate in Array(objects.keys) + Array(managers) where candidate.isDescendant(of: path) {
            let rest = candidate.rawValue.dropFirst(prefixCount)
            if let first = rest.split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }

    /// Signatures may contain `{`/`}` only; names are validated; nothing else needs escaping in attributes.
    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension String {
    /// Foundation-free replacement, used only to build introspection XML.
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard contains(target) else { return self }
        return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
