import Foundation

/// A module graph: each module and the modules it imports directly. Read from the drawing in docs/architecture.md or
/// from the `import` lines of Sources/, so the two can be compared arrow for arrow.
struct ModuleGraph: Equatable, CustomStringConvertible {
    /// Modules of the toolchain that cost no dependency and are left out of the drawing.
    static let toolchainModules: Set<String> = ["Glibc", "Darwin", "Musl", "Dispatch", "Synchronization"]

    /// Each module's direct imports.
    var arrows: [String: Set<String>]

    /// `Module ─► A, B` for each module, sorted.
    var description: String {
        arrows.keys.sorted().map { "\($0) ─► \(arrows[$0, default: []].sorted().joined(separator: ", "))" }
            .joined(separator: "\n")
    }

    /// Every module `module` reaches through its imports, itself left out.
    func closure(of module: String) -> Set<String> {
        var reached: Set<String> = []
        var pending = Array(arrows[module, default: []])
        while let next = pending.popLast() {
            guard reached.insert(next).inserted else { continue }
            pending += arrows[next, default: []]
        }
        return reached
    }

    /// The arrows in `self` that `other` does not have, as `A ─► B` lines.
    func arrows(missingFrom other: ModuleGraph) -> [String] {
        arrows.keys.sorted().flatMap { module in
            arrows[module, default: []].subtracting(other.arrows[module, default: []]).sorted().map {
                "\(module) ─► \($0)"
            }
        }
    }

    /// The graph the first fenced block under `## Modules, as really imported` draws: one line per module,
    /// `Module ─► A, B` (a line that starts with spaces continues the one above), a parenthesised remark after it.
    init(drawing markdown: String) throws {
        guard let heading = markdown.range(of: "## Modules, as really imported"),
            let open = markdown.range(of: "```\n", range: heading.upperBound..<markdown.endIndex),
            let close = markdown.range(of: "\n```", range: open.upperBound..<markdown.endIndex)
        else { throw Unreadable(reason: "no drawing under \"## Modules, as really imported\"") }
        var arrows: [String: Set<String>] = [:]
        var current: String?
        for rawLine in markdown[open.upperBound..<close.lowerBound].split(separator: "\n") {
            var line = String(rawLine)
            if let remark = line.range(of: "  (") { line = String(line[..<remark.lowerBound]) }
            let isContinuation = line.first == " "
            var targets = line
            if !isContinuation {
                let parts = line.components(separatedBy: "─►")
                let module = parts[0].trimmingCharacters(in: .whitespaces)
                guard !module.isEmpty, module.allSatisfy({ $0.isLetter || $0.isNumber }) else {
                    throw Unreadable(reason: "not a module line: \(rawLine)")
                }
                current = module
                arrows[module, default: []].formUnion([])
                targets = parts.count > 1 ? parts[1] : ""
            }
            guard let module = current else { throw Unreadable(reason: "a continuation first: \(rawLine)") }
            for target in targets.split(separator: ",") {
                let name = target.trimmingCharacters(in: .whitespaces)
                if !name.isEmpty { arrows[module, default: []].insert(name) }
            }
        }
        self.arrows = arrows
    }

    /// The graph Sources/ imports: each folder a module, each `import` at the head of its files an arrow (the head
    /// ends at the first line that is neither an import, a comment, a blank nor a `#if`, so code inside a string
    /// literal further down is not read as an import).
    init(sources: URL) throws {
        let files = FileManager.default
        var arrows: [String: Set<String>] = [:]
        for module in try files.contentsOfDirectory(atPath: sources.path) where !module.hasPrefix(".") {
            arrows[module] = []
            let folder = sources.appendingPathComponent(module)
            guard let walker = files.enumerator(atPath: folder.path) else { continue }
            for case let path as String in walker where path.hasSuffix(".swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(path), encoding: .utf8)
                for imported in Self.headImports(text) where !Self.toolchainModules.contains(imported) {
                    arrows[module, default: []].insert(imported)
                }
            }
        }
        self.arrows = arrows
    }

    /// The modules a file's head imports.
    static func headImports(_ text: String) -> [String] {
        var modules: [String] = []
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("//") || line.hasPrefix("#") { continue }
            let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
            guard let index = words.firstIndex(of: "import") else { break }
            let kindOrName = words.dropFirst(index + 1)
            let declarationKinds: Set<Substring> = ["struct", "class", "enum", "protocol", "func", "var", "typealias"]
            guard let name = kindOrName.first(where: { !declarationKinds.contains($0) }) else { break }
            // `import Foo.Bar` names module Foo.
            modules.append(String(name.split(separator: ".")[0]))
        }
        return modules
    }

    /// Why the drawing could not be read.
    struct Unreadable: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }
}
