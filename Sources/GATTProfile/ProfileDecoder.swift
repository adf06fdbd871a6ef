import GATTModel

/// Decodes the YAML node tree of one profile into a `PeripheralProfile`, collecting every problem instead of
/// stopping at the first: each part decodes on its own, and a part that fails is left out while the rest go on.
///
/// The format is documented in docs/profile-format.md.
struct ProfileDecoder {
    /// The file name the diagnostics carry.
    let file: String
    /// The problems found so far.
    private(set) var diagnostics: [Diagnostic] = []
    /// What a stack's checks need of the profile, with where each part was written.
    var sites: ProfileSites

    /// What the decoder knows of a characteristic once decoded, for `includes`, behaviour and warnings.
    struct Declared {
        var characteristic: Characteristic
        /// Where its `properties` were written (write/write-without-response warnings point there).
        var propertiesMark: Mark
        /// The reasons writes to it can fail, for the write-without-response warning.
        var writeErrorSources: [String] = []
    }

    /// Declared characteristics by id, in declaration order.
    var declared: [String: Declared] = [:]
    var declaredOrder: [String] = []
    /// Every id (service and characteristic: one namespace) with where it was first declared.
    var ids: [String: Mark] = [:]
    /// The ids that name services, so behaviour can say "that is a service".
    var serviceIDs: Set<String> = []
    /// The UUIDs of the primary services declared (even those that failed), which advertised UUIDs must name.
    var primaryServiceUUIDs: Set<BluetoothUUID> = []
    /// Each service id's UUID, so `service-uuids` may name a service by its id.
    var serviceUUIDsByID: [String: BluetoothUUID] = [:]
    /// The device's state variables by name, once `behaviour.state` is decoded.
    var stateVariables: [String: StateVariable] = [:]
    /// Each record store's characteristic, once `behaviour.records` is decoded.
    var recordStores: [String: Characteristic] = [:]
    /// The characteristics a schedule writes, which protocol actions may pause and resume.
    var scheduledCharacteristics: Set<String> = []

    /// A decoder whose diagnostics name `file`.
    init(file: String) {
        self.file = file
        sites = ProfileSites(file: file)
    }

    /// The diagnostics ordered by position (stable for equal positions), as a compiler lists them.
    var sortedDiagnostics: [Diagnostic] {
        diagnostics.enumerated().sorted {
            ($0.element.line, $0.element.column, $0.offset) < ($1.element.line, $1.element.column, $1.offset)
        }.map(\.element)
    }

    /// Parses and decodes; nil when the text is not usable at all (a syntax error or no mapping at the top).
    mutating func decode(text: String) -> PeripheralProfile? {
        let root: YAMLNode?
        do {
            root = try YAMLParser(text: text).parse()
        } catch {
            report(error.mark, error.message, hint: error.hint)
            return nil
        }
        guard let root, !root.isNull else {
            report(Mark(line: 1, column: 1), "the profile is empty; it needs at least `name` and `services`")
            return nil
        }
        return decodeProfile(root)
    }

    // MARK: Reporting

    /// Records an error at a mark.
    mutating func report(_ mark: Mark, _ message: String, hint: String? = nil) {
        diagnostics.append(
            Diagnostic(
                file: file, line: mark.line, column: mark.column, severity: .error, message: message, hint: hint))
    }

    /// Records an error at a node.
    mutating func report(_ node: YAMLNode, _ message: String, hint: String? = nil) {
        report(node.mark, message, hint: hint)
    }

    /// Records an error at `node` when `characteristic`'s value is constant (`cached`), which no schedule or protocol
    /// may change (docs/profile-format.md, "Values"); whether it did.
    mutating func refusesConstant(_ characteristic: Characteristic, at node: YAMLNode) -> Bool {
        guard characteristic.value.isCached else { return false }
        report(node, "characteristic `\(characteristic.id)` has a constant (cached) value, which cannot change")
        return true
    }

    /// Records a warning at a mark.
    mutating func warn(_ mark: Mark, _ message: String, hint: String? = nil) {
        diagnostics.append(
            Diagnostic(
                file: file, line: mark.line, column: mark.column, severity: .warning, message: message, hint: hint))
    }

    // MARK: Mappings

    /// The entries of a mapping whose keys were checked against the allowed ones.
    struct Fields {
        /// The mapping node itself.
        let node: YAMLNode
        /// Key -> (key node, value node), first occurrence wins.
        var entries: [String: (key: YAMLNode, value: YAMLNode)] = [:]
        /// The value node for a key.
        subscript(key: String) -> YAMLNode? { entries[key]?.value }
        /// The key node for a key (where to point at the key rather than its value).
        func keyNode(_ key: String) -> YAMLNode? { entries[key]?.key }
    }

    /// Reads a mapping, reporting a wrong kind, unknown keys (with a hint), duplicate keys and missing keys.
    mutating func fields(
        _ node: YAMLNode, in what: String, allowed: [String], required: [String] = []
    ) -> Fields? {
        guard case .mapping(let pairs) = node.kind else {
            report(node, "expected a mapping for \(what), found \(node.kindName)")
            return nil
        }
        var result = Fields(node: node)
        for (key, value) in pairs {
            guard let name = key.scalar else {
                report(key, "expected a scalar key in \(what), found \(key.kindName)")
                continue
            }
            guard allowed.contains(name) else {
                let hint =
                    EditDistance.hint(for: name, in: allowed)
                    ?? "expected one of " + allowed.map { "`\($0)`" }.joined(separator: ", ")
                report(key, "unknown key `\(name)` in \(what)", hint: hint)
                continue
            }
            if let first = result.entries[name] {
                report(
                    key, "duplicate key `\(name)` in \(what); first at \(first.key.mark.line):\(first.key.mark.column)")
                continue
            }
            result.entries[name] = (key, value)
        }
        for name in required where result.entries[name] == nil {
            report(node, "missing key `\(name)` in \(what)")
        }
        return result
    }

    /// A mapping with exactly one key, the "tagged" form (`random-walk: {...}`, `reject: unlikely-error`).
    mutating func tagged(_ node: YAMLNode, in what: String, allowed: [String]) -> (String, YAMLNode)? {
        guard let fields = fields(node, in: what, allowed: allowed) else { return nil }
        guard fields.entries.count == 1, let (name, entry) = fields.entries.first else {
            if fields.entries.count > 1 {
                report(node, "\(what) takes exactly one of " + allowed.map { "`\($0)`" }.joined(separator: ", "))
            } else if case .mapping(let pairs) = node.kind, pairs.isEmpty {
                report(node, "\(what) is empty; expected one of " + allowed.map { "`\($0)`" }.joined(separator: ", "))
            }
            return nil
        }
        return (name, entry.value)
    }

    /// The items of a sequence, or nil (reported) for any other kind.
    mutating func sequence(_ node: YAMLNode, in what: String) -> [YAMLNode]? {
        guard case .sequence(let items) = node.kind else {
            report(node, "expected a sequence for \(what), found \(node.kindName)")
            return nil
        }
        return items
    }

    // MARK: Scalars

    /// The text of a scalar (quoted or not), or nil (reported) for other kinds and null.
    mutating func string(_ node: YAMLNode, for what: String) -> String? {
        guard let text = node.scalar, !node.isNull else {
            report(node, "expected text for \(what), found \(node.kindName)")
            return nil
        }
        return text
    }

    /// A name chosen from a fixed list, with a "did you mean" hint when it is not one of them.
    mutating func choice(_ node: YAMLNode, for what: String, from names: [String]) -> String? {
        guard let text = string(node, for: what) else { return nil }
        guard names.contains(text) else {
            let hint =
                EditDistance.hint(for: text, in: names)
                ?? "expected one of " + names.map { "`\($0)`" }.joined(separator: ", ")
            report(node, "unknown \(what) `\(EditDistance.echo(text))`", hint: hint)
            return nil
        }
        return text
    }

    /// A plain scalar that is a number; quoted scalars are text, so `"72"` is reported, not converted.
    mutating func number(_ node: YAMLNode, for what: String) -> Double? {
        guard let text = plain(node, expecting: "a number", for: what) else { return nil }
        if let integer = Self.integer(text) { return Double(integer) }
        guard let value = Double(text.filter { $0 != "_" }) else {
            report(node, "expected a number for \(what), found `\(EditDistance.echo(text))`")
            return nil
        }
        return value
    }

    /// A plain scalar that is an integer (decimal, or hexadecimal with `0x`) within `range`.
    mutating func integer(_ node: YAMLNode, for what: String, in range: ClosedRange<Int64>) -> Int64? {
        guard let text = plain(node, expecting: "an integer", for: what) else { return nil }
        guard let value = Self.integer(text) else {
            report(node, "expected an integer for \(what), found `\(EditDistance.echo(text))`")
            return nil
        }
        guard range.contains(value) else {
            report(node, "\(what) \(text) is out of range \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return value
    }

    /// A plain `true` or `false`.
    mutating func boolean(_ node: YAMLNode, for what: String) -> Bool? {
        guard let text = plain(node, expecting: "`true` or `false`", for: what) else { return nil }
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default:
            report(node, "expected `true` or `false` for \(what), found `\(EditDistance.echo(text))`")
            return nil
        }
    }

    /// A duration such as `1s`, `250ms`, `1.5s` or `2min`.
    mutating func duration(_ node: YAMLNode, for what: String) -> Duration? {
        guard let text = plain(node, expecting: "a duration", for: what) else { return nil }
        if let duration = DurationText.parse(text) { return duration }
        report(
            node, "expected a duration for \(what) such as `1s`, `250ms` or `2min`, found `\(EditDistance.echo(text))`")
        return nil
    }

    /// The text of a plain scalar, reporting quoted scalars, null and collections.
    private mutating func plain(_ node: YAMLNode, expecting kind: String, for what: String) -> String? {
        guard let text = node.scalar, !node.isNull else {
            report(node, "expected \(kind) for \(what), found \(node.kindName)")
            return nil
        }
        guard node.isPlainScalar else {
            report(node, "expected \(kind) for \(what), found the quoted string \"\(text)\"")
            return nil
        }
        return text
    }

    /// Parses `72`, `-3`, `0x2A`, `1_000`; nil for anything else.
    static func integer(_ text: String) -> Int64? {
        var digits = Substring(text.filter { $0 != "_" })
        let negative = digits.hasPrefix("-")
        if negative || digits.hasPrefix("+") { digits = digits.dropFirst() }
        let value: Int64?
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
            value = Int64(digits.dropFirst(2), radix: 16)
        } else {
            value = digits.first?.isNumber == true ? Int64(digits, radix: 10) : nil
        }
        guard let value else { return nil }
        return negative ? -value : value
    }
}
