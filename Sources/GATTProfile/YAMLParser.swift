internal import CYAML

/// The one owner of a libyaml parser handle (and of the input bytes it reads, which must outlive it);
/// `deinit` frees both, so no path through `parse` can leak them. Event-based, as in libyaml's `yaml.h`.
final class YAMLParser {
    /// A syntax error libyaml reported: its problem text, where, and what it was parsing then.
    struct SyntaxError: Error {
        /// Where libyaml noticed the problem.
        var mark: Mark
        /// The message, e.g. "YAML syntax error: mapping values are not allowed in this context".
        var message: String
        /// libyaml's context ("while parsing a block mapping") with its position, when it gave one.
        var hint: String?
    }

    /// The deepest nesting accepted: profiles need about ten levels, and the tree is released recursively, so an
    /// absurd depth would otherwise exhaust the stack.
    static let maximumDepth = 64

    private let parser: UnsafeMutablePointer<yaml_parser_t>
    private let input: UnsafeMutableBufferPointer<UInt8>
    private let isInitialized: Bool

    /// A parser over the UTF-8 bytes of `text`.
    init(text: String) {
        let bytes = Array(text.utf8)
        input = .allocate(capacity: max(bytes.count, 1))
        _ = input.initialize(from: bytes)
        parser = .allocate(capacity: 1)
        isInitialized = yaml_parser_initialize(parser) == 1
        if isInitialized {
            yaml_parser_set_input_string(parser, input.baseAddress, bytes.count)
            yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        }
    }

    deinit {
        if isInitialized { yaml_parser_delete(parser) }
        parser.deallocate()
        input.deallocate()
    }

    /// Parses the text's single document into a node tree; nil for an empty stream. Anchors and aliases are
    /// refused (profiles have no need for them, and aliases allow exponential "billion laughs" documents).
    func parse() throws(SyntaxError) -> YAMLNode? {
        guard isInitialized else {
            throw SyntaxError(mark: Mark(line: 1, column: 1), message: "cannot initialize the YAML parser")
        }
        enum Frame {
            case mapping(Mark, [(key: YAMLNode, value: YAMLNode)], pendingKey: YAMLNode?)
            case sequence(Mark, [YAMLNode])
        }
        var stack: [Frame] = []
        var root: YAMLNode?
        var documents = 0

        func complete(_ node: YAMLNode) {
            guard let top = stack.popLast() else {
                root = node
                return
            }
            switch top {
            case .mapping(let mark, var entries, let pendingKey):
                if let key = pendingKey {
                    entries.append((key, node))
                    stack.append(.mapping(mark, entries, pendingKey: nil))
                } else {
                    stack.append(.mapping(mark, entries, pendingKey: node))
                }
            case .sequence(let mark, var items):
                items.append(node)
                stack.append(.sequence(mark, items))
            }
        }

        while true {
            var event = yaml_event_t()
            guard yaml_parser_parse(parser, &event) == 1 else { throw syntaxError() }
            defer { yaml_event_delete(&event) }
            let mark = Mark(line: Int(event.start_mark.line) + 1, column: Int(event.start_mark.column) + 1)
            switch event.type {
            case YAML_STREAM_END_EVENT:
                return root
            case YAML_DOCUMENT_START_EVENT:
                documents += 1
                if documents > 1 {
                    throw SyntaxError(mark: mark, message: "a profile is one YAML document; found a second one")
                }
            case YAML_ALIAS_EVENT:
                throw SyntaxError(mark: mark, message: "YAML aliases are not supported in profiles")
            case YAML_SCALAR_EVENT:
                let scalar = event.data.scalar
                if scalar.anchor != nil {
                    throw SyntaxError(mark: mark, message: "YAML anchors are not supported in profiles")
                }
                let text =
                    scalar.value.map {
                        String(decoding: UnsafeBufferPointer(start: $0, count: scalar.length), as: UTF8.self)
                    }
                    ?? ""
                complete(YAMLNode(kind: .scalar(text, isQuoted: scalar.style != YAML_PLAIN_SCALAR_STYLE), mark: mark))
            case YAML_MAPPING_START_EVENT:
                if event.data.mapping_start.anchor != nil {
                    throw SyntaxError(mark: mark, message: "YAML anchors are not supported in profiles")
                }
                guard stack.count < Self.maximumDepth else {
                    throw SyntaxError(mark: mark, message: "the YAML nests deeper than \(Self.maximumDepth) levels")
                }
                stack.append(.mapping(mark, [], pendingKey: nil))
            case YAML_SEQUENCE_START_EVENT:
                if event.data.sequence_start.anchor != nil {
                    throw SyntaxError(mark: mark, message: "YAML anchors are not supported in profiles")
                }
                guard stack.count < Self.maximumDepth else {
                    throw SyntaxError(mark: mark, message: "the YAML nests deeper than \(Self.maximumDepth) levels")
                }
                stack.append(.sequence(mark, []))
            case YAML_MAPPING_END_EVENT:
                if case .mapping(let start, let entries, _) = stack.popLast() {
                    complete(YAMLNode(kind: .mapping(entries), mark: start))
                }
            case YAML_SEQUENCE_END_EVENT:
                if case .sequence(let start, let items) = stack.popLast() {
                    complete(YAMLNode(kind: .sequence(items), mark: start))
                }
            default:
                break  // stream start, document end, no event
            }
        }
    }

    /// The error libyaml recorded in the parser, with its 1-based position.
    private func syntaxError() -> SyntaxError {
        let state = parser.pointee
        let problem = state.problem.map { String(cString: $0) } ?? "unknown problem"
        let mark = Mark(line: Int(state.problem_mark.line) + 1, column: Int(state.problem_mark.column) + 1)
        var hint: String?
        if let context = state.context.map({ String(cString: $0) }) {
            hint = "\(context) at \(state.context_mark.line + 1):\(state.context_mark.column + 1)"
        }
        return SyntaxError(mark: mark, message: "YAML syntax error: \(problem)", hint: hint)
    }
}
