import Foundation
import Testing

/// The repository's documents are its memory, and sources cite them by heading (`docs/bluez.md, "Writes"`): a
/// citation whose document or heading is gone sends the reader nowhere, so every one must resolve.
@Suite struct DocumentReferencesTests {
    /// A citation: the document as written, the quoted heading (its start: a comment may wrap inside the quote).
    struct Citation: CustomStringConvertible {
        var file: String
        var line: Int
        var document: String
        var heading: String?
        var description: String { "\(file):\(line): \(document)\(heading.map { ", \"\($0)\"" } ?? "")" }
    }

    static let root = BlemuProcess.repositoryRoot.path

    /// The checked-in text files a reader follows citations from: sources, tests, docs, scripts, examples, python.
    static func citingFiles() -> [String] {
        let roots = [
            "Sources", "Tests", "docs", "scripts", "examples", "python", "Benchmarks", "profiles", "README.md",
        ]
        let extensions: Set<String> = ["swift", "md", "py", "sh", "yaml", "toml", ""]
        var files: [String] = []
        for top in roots {
            let path = root + "/" + top
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            guard isDirectory.boolValue else {
                files.append(top)
                continue
            }
            let walker = FileManager.default.enumerator(atPath: path)
            while let relative = walker?.nextObject() as? String {
                let components = relative.split(separator: "/")
                // Virtual environments, build products and caches are not the repository's.
                if components.contains(where: { $0.hasPrefix(".") || $0 == "__pycache__" || $0.hasSuffix(".egg-info") })
                {
                    continue
                }
                let name = String(components.last ?? "")
                let ext = name.contains(".") ? String(name.split(separator: ".").last ?? "") : ""
                if extensions.contains(ext) { files.append(top + "/" + relative) }
            }
        }
        return files
    }

    /// Every citation of a document by its heading, and every path of a document under docs/, in `text`.
    static func citations(in text: String, file: String) -> [Citation] {
        let pattern = #"((?:docs/|Benchmarks/)?[A-Za-z][\w-]*\.md)(?:,? "([^"\n]+)"?)?"#
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return [] }
        let whole = NSRange(text.startIndex..., in: text)
        return expression.matches(in: text, range: whole).compactMap { match in
            guard let documentRange = Range(match.range(at: 1), in: text) else { return nil }
            let document = String(text[documentRange])
            let heading = Range(match.range(at: 2), in: text).map { String(text[$0]) }
            // Only the project's own documents: a bare `README.md` without a heading is a file name in prose.
            guard heading != nil || document.hasPrefix("docs/") else { return nil }
            let line = text[..<documentRange.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
            return Citation(file: file, line: line, document: document, heading: heading)
        }
    }

    /// The document a citation names: as written from the root, else in docs/, else beside the citing file.
    static func resolve(_ citation: Citation) -> String? {
        let beside = (citation.file as NSString).deletingLastPathComponent + "/" + citation.document
        return [citation.document, "docs/" + citation.document, beside].first {
            FileManager.default.fileExists(atPath: root + "/" + $0)
        }
    }

    /// A document's headings, without the `#`s and backticks.
    static func headings(of document: String) -> [String] {
        let text = (try? String(contentsOfFile: root + "/" + document, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.hasPrefix("#") }.map {
            $0.drop { $0 == "#" || $0 == " " }.replacingOccurrences(of: "`", with: "")
        }
    }

    @Test func everyCitedDocumentAndHeadingExists() throws {
        let files = Self.citingFiles()
        #expect(files.count > 100, "the walk found too few files to be the repository")
        var checked = 0
        var broken: [String] = []
        // Each document's headings are read once, however often it is cited.
        var headings: [String: [String]] = [:]
        for file in files {
            guard let text = try? String(contentsOfFile: Self.root + "/" + file, encoding: .utf8) else { continue }
            for citation in Self.citations(in: text, file: file) {
                checked += 1
                guard let document = Self.resolve(citation) else {
                    broken.append("\(citation): no such document")
                    continue
                }
                guard let heading = citation.heading else { continue }
                let wanted = heading.trimmingCharacters(in: CharacterSet(charactersIn: ".,`"))
                if headings[document] == nil { headings[document] = Self.headings(of: document) }
                if !(headings[document] ?? []).contains(where: { $0.hasPrefix(wanted) }) {
                    broken.append("\(citation): \(document) has no such heading")
                }
            }
        }
        #expect(checked > 30, "found only \(checked) citations: the pattern no longer matches how sources cite")
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    /// The check itself can fail: a heading that is not there is found.
    @Test func aMissingHeadingIsFound() {
        let citations = Self.citations(
            in: "// see docs/bluez.md, \"No such heading\" and (bluez.md, \"Writes\")", file: "Sources/X.swift")
        #expect(citations.count == 2)
        let headings = Self.headings(of: "docs/bluez.md")
        #expect(!headings.contains { $0.hasPrefix("No such heading") })
        #expect(headings.contains { $0.hasPrefix("Writes") })
    }
}
