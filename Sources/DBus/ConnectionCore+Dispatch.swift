import Logging

// Incoming method calls: routing, the standard interfaces, and answering. All of this runs on the loop thread,
// except `answer`, which runs wherever a handler answers.
extension ConnectionCore {
    func metadata(_ context: CallContext) -> Logger.Metadata {
        [
            "sender": "\(context.sender ?? "")", "path": "\(context.path)",
            "interface": "\(context.interface ?? "")", "member": "\(context.member)",
        ]
    }

    func handleMethodCall(_ message: Message) {
        counters.callsReceived.add(1, ordering: .relaxed)
        let context = callNames.context(of: message)
        trace(
            "← call",
            metadata: metadata(context).merging(
                ["serial": "\(message.serial)", "signature": "\(message.signature)"], uniquingKeysWith: { a, _ in a }))
        let route = tree.withLock { $0.route(path: context.path, interface: context.interface, member: context.member) }
        switch route {
        case .method(let routed):
            let method = routed.method
            let arguments = method.decoding == .values ? message.arguments() : []
            if !message.hasSignature(method.inputs) {
                MethodCall(core: self, message: message, context: context, arguments: arguments, outputs: nil).fail(
                    StandardErrorName.invalidArgs,
                    "\(context.member) takes '\(method.inputs)', got '\(message.signature)'")
                return
            }
            switch method.handler {
            case .immediate(let body):
                body(
                    MethodCall(
                        core: self, message: message, context: context, arguments: arguments, outputs: method.outputs))
            case .task(let body):
                // A noncopyable call cannot be captured by an escaping closure; its copyable parts can.
                let outputs = method.outputs
                Task {
                    await body(
                        MethodCall(
                            core: self, message: message, context: context, arguments: arguments, outputs: outputs))
                }
            }
        case .failure(let name, let text):
            MethodCall(core: self, message: message, context: context, arguments: [], outputs: nil).fail(name, text)
        case .introspect:
            let xml = tree.withLock { $0.introspectionXML(for: context.path) }
            MethodCall(core: self, message: message, context: context, arguments: [], outputs: nil).reply([.string(xml)]
            )
        case .getProperty, .getAllProperties, .setProperty, .managedObjects:
            let call = MethodCall(
                core: self, message: message, context: context, arguments: message.arguments(), outputs: nil)
            handleStandard(route, call)
        }
    }

    private func handleStandard(_ route: ObjectTree.Route, _ call: consuming MethodCall) {
        let path = call.path
        let arguments = call.arguments
        let signature = call.signature
        switch route {
        case .getProperty:
            guard signature == "ss", case .string(let name) = arguments[0], case .string(let property) = arguments[1]
            else { return call.fail(StandardErrorName.invalidArgs, "Get takes 'ss', got '\(signature)'") }
            switch findProperty(path, name, property) {
            case .failure(let error): call.fail(error)
            case .success(let found):
                do {
                    call.reply([.variant(try read(found, at: path, name))])
                } catch {
                    call.fail(error)
                }
            }
        case .getAllProperties:
            guard signature == "s", case .string(let name) = arguments[0] else {
                return call.fail(StandardErrorName.invalidArgs, "GetAll takes 's', got '\(signature)'")
            }
            let interface = tree.withLock { $0.objects[path]?.first { $0.name == name } }
            guard let interface else {
                // The standard interfaces have no properties; anything else is unknown here.
                if name.hasPrefix("org.freedesktop.DBus.") || name.isEmpty { return call.reply([.vardict([:])]) }
                return call.fail(StandardErrorName.unknownInterface, "no interface \(name) at \(path)")
            }
            call.reply([propertyDictionary(interface, at: path)])
        case .setProperty:
            guard signature == "ssv", case .string(let name) = arguments[0], case .string(let property) = arguments[1],
                case .variant(let value) = arguments[2]
            else { return call.fail(StandardErrorName.invalidArgs, "Set takes 'ssv', got '\(signature)'") }
            switch findProperty(path, name, property) {
            case .failure(let error): call.fail(error)
            case .success(let found):
                guard let setter = found.set else {
                    return call.fail(StandardErrorName.propertyReadOnly, "\(name).\(property) is read-only")
                }
                guard value.signature == found.signature else {
                    return call.fail(
                        StandardErrorName.invalidArgs,
                        "\(property) has type '\(found.signature)', got '\(value.signature)'")
                }
                do {
                    try setter(value)
                } catch {
                    return call.fail(error)
                }
                call.reply()
                if found.emitsChangedOnSet, let current = try? read(found, at: path, name) {
                    emitPropertiesChanged(path: path, interface: name, changed: [property: current], invalidated: [])
                }
            }
        case .managedObjects:
            let objects = tree.withLock { $0.objects(below: path) }
            let entries = objects.map { object in
                DBusValue.DictionaryEntry(.objectPath(object.0), interfacesAndProperties(object.1, at: object.0))
            }
            call.reply([.dictionary(key: "o", value: "a{sa{sv}}", entries)])
        default:
            call.fail(StandardErrorName.unknownMethod, "not a standard method")
        }
    }

    private func findProperty(_ path: ObjectPath, _ interface: String, _ name: String) -> Result<Property, DBusError> {
        tree.withLock { tree in
            guard let found = tree.objects[path]?.first(where: { $0.name == interface }) else {
                return .failure(
                    DBusError(name: StandardErrorName.unknownInterface, message: "no interface \(interface) at \(path)")
                )
            }
            guard let property = found.properties.first(where: { $0.name == name }) else {
                return .failure(
                    DBusError(name: StandardErrorName.unknownProperty, message: "no property \(interface).\(name)"))
            }
            return .success(property)
        }
    }

    /// Reads a property through its getter and checks the type the getter returned.
    func read(_ property: Property, at path: ObjectPath, _ interface: String) throws -> DBusValue {
        let value = try property.get()
        guard value.signature == property.signature else {
            logger.error(
                "property getter returned the wrong type",
                metadata: [
                    "path": "\(path)", "interface": "\(interface)", "property": "\(property.name)",
                    "declared": "\(property.signature)", "returned": "\(value.signature)",
                ])
            throw DBusError(name: StandardErrorName.failed, message: "\(property.name) has the wrong type")
        }
        return value
    }

    /// `a{sv}` of every readable property; one that fails to read is left out and logged, so one bad getter does
    /// not fail a whole `GetManagedObjects` (and with it bluetoothd's RegisterApplication).
    func propertyDictionary(_ interface: Interface, at path: ObjectPath) -> DBusValue {
        var entries: [DBusValue.DictionaryEntry] = []
        entries.reserveCapacity(interface.properties.count)
        for property in interface.properties {
            do {
                entries.append(.init(.string(property.name), .variant(try read(property, at: path, interface.name))))
            } catch {
                logger.warning(
                    "property left out: its getter failed",
                    metadata: ["path": "\(path)", "property": "\(property.name)", "error": "\(error)"])
            }
        }
        return .dictionary(key: "s", value: "v", entries)
    }

    /// `a{sa{sv}}` for one object, as GetManagedObjects and InterfacesAdded carry it.
    func interfacesAndProperties(_ interfaces: [Interface], at path: ObjectPath) -> DBusValue {
        .dictionary(
            key: "s", value: "a{sv}",
            interfaces.map { .init(.string($0.name), propertyDictionary($0, at: path)) })
    }

    func emitPropertiesChanged(path: ObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String])
    {
        do {
            let signal = try Message.signal(
                path: path, interface: ObjectTree.Standard.properties, member: "PropertiesChanged")
            try signal.append([.string(interface), .vardict(changed), .strings(invalidated)])
            emit(signal)
        } catch {
            logger.error("PropertiesChanged not sent", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    func emit(_ signal: Message) {
        trace(
            "→ signal",
            metadata: [
                "path": "\(signal.path?.rawValue ?? "")", "interface": "\(signal.interface ?? "")",
                "member": "\(signal.member ?? "")", "signature": "\(signal.signature)",
            ])
        send(signal)
    }

    /// libdbus silently refuses to send fds over a connection that cannot carry them: refuse early, with a reason.
    func checkFileDescriptors(_ values: [DBusValue]) throws(MarshalError) {
        guard !canPassFileDescriptors, values.contains(where: \.containsUnixFD) else { return }
        throw .invalidValue("this connection cannot pass unix file descriptors")
    }

    /// Sends the reply for `call` (or nothing if it is flagged no-reply). Counts every answer exactly once.
    func answer(_ call: Message, context: CallContext, with values: [DBusValue], outputs: Signature?) {
        counters.callsAnswered.add(1, ordering: .relaxed)
        guard call.expectsReply else {
            trace("call answered; no reply sent (no-reply flag)", metadata: metadata(context))
            return
        }
        guard let reply = call.methodReturn() else { return logger.error("out of memory building a reply") }
        do {
            try checkFileDescriptors(values)
            try reply.append(values)
            if let outputs {
                // What `append` wrote is each value's signature in turn (`check` held containers to theirs): the
                // reply's signature without asking libdbus, which reads it back from the new message's header at
                // some 3,600 instructions a reply (Benchmarks/README.md, "Instructions per request").
                let actual =
                    values.count == 1
                    ? values[0].signature : Signature(unchecked: values.map(\.signature.rawValue).joined())
                if actual != outputs { throw MarshalError.typeMismatch(expected: outputs, actual: actual) }
            }
        } catch {
            logger.error(
                "reply does not marshal; answering \(StandardErrorName.failed) instead",
                metadata: metadata(context).merging(["error": "\(error)"], uniquingKeysWith: { a, _ in a }))
            return sendError(call, context: context, name: StandardErrorName.failed, text: "invalid reply: \(error)")
        }
        trace(
            "→ reply",
            metadata: metadata(context).merging(
                ["reply-serial": "\(call.serial)", "signature": "\(reply.signature)"], uniquingKeysWith: { a, _ in a }))
        counters.repliesSent.add(1, ordering: .relaxed)
        send(reply)
    }

    /// Sends an error reply for `call` (or nothing if it is flagged no-reply). Counts every answer exactly once.
    func answer(_ call: Message, context: CallContext, errorName: String, text: String, dropped: Bool = false) {
        counters.callsAnswered.add(1, ordering: .relaxed)
        if dropped { counters.droppedCalls.add(1, ordering: .relaxed) }
        guard call.expectsReply else {
            trace("call failed; no reply sent (no-reply flag)", metadata: metadata(context))
            return
        }
        sendError(call, context: context, name: errorName, text: text)
    }

    private func sendError(_ call: Message, context: CallContext, name: String, text: String) {
        guard let reply = call.errorReply(name: name, message: text) else {
            return logger.error("out of memory building an error reply")
        }
        trace(
            "→ error",
            metadata: metadata(context).merging(
                ["reply-serial": "\(call.serial)", "error": "\(name)", "message": "\(text)"],
                uniquingKeysWith: { a, _ in a }))
        counters.repliesSent.add(1, ordering: .relaxed)
        send(reply)
    }
}
