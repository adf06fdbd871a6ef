/// A position in the YAML text, 1-based, as libyaml's marks give it (they are 0-based; we add one).
public struct Mark: Hashable, Sendable {
    /// The 1-based line.
    public var line: Int
    /// The 1-based column.
    public var column: Int

    /// The position at `line` and `column`, both 1-based.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }
}

/// A node of the small YAML tree the decoder reads: what libyaml's events describe, with their marks.
///
/// Scalars keep whether they were quoted, so `"72"` stays a string and never becomes a number.
struct YAMLNode: Sendable {
    /// The three kinds of YAML node.
    enum Kind: Sendable {
        /// A scalar; `isQuoted` for single- or double-quoted, literal and folded styles.
        case scalar(String, isQuoted: Bool)
        /// A mapping, with its entries in document order (duplicates are kept, so they can be reported).
        case mapping([(key: YAMLNode, value: YAMLNode)])
        /// A sequence.
        case sequence([YAMLNode])
    }

    /// What the node is.
    var kind: Kind
    /// Where the node starts.
    var mark: Mark

    /// The scalar's text, when the node is a scalar.
    var scalar: String? {
        if case .scalar(let text, _) = kind { return text }
        return nil
    }

    /// Whether the node is a plain (unquoted) scalar, the only kind that may be a number, boolean or null.
    var isPlainScalar: Bool {
        if case .scalar(_, let quoted) = kind { return !quoted }
        return false
    }

    /// Whether the node is YAML's null: an empty plain scalar, `~` or `null`.
    var isNull: Bool {
        guard isPlainScalar, let text = scalar else { return false }
        return text.isEmpty || text == "~" || text == "null" || text == "Null" || text == "NULL"
    }

    /// A short name of the node's kind for messages: "a mapping", "a sequence", "a scalar".
    var kindName: String {
        switch kind {
        case .scalar: isNull ? "null" : "a scalar"
        case .mapping: "a mapping"
        case .sequence: "a sequence"
        }
    }
}
