import Foundation
import Testing

/// docs/architecture.md's drawing is the module graph: an import that adds an arrow it does not show, or an arrow
/// no import makes any more, fails here, and so does anything that would make the serving binary link Foundation or
/// ArgumentParser (about 5 MiB of every process: Benchmarks/README.md).
@Suite struct ModuleGraphTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func graphs() throws -> (drawn: ModuleGraph, imported: ModuleGraph) {
        let document = try String(
            contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let imported = try ModuleGraph(sources: Self.root.appendingPathComponent("Sources"))
        return (try ModuleGraph(drawing: document), imported)
    }

    @Test func theDrawingIsTheImportGraphArrowForArrow() throws {
        let (drawn, imported) = try graphs()
        let undrawn = imported.arrows(missingFrom: drawn)
        let unmade = drawn.arrows(missingFrom: imported)
        #expect(undrawn.isEmpty, "imported but not drawn in docs/architecture.md:\n\(undrawn.joined(separator: "\n"))")
        #expect(unmade.isEmpty, "drawn but imported nowhere:\n\(unmade.joined(separator: "\n"))")
        let folders = Set(imported.arrows.keys)
        let drawnModules = Set(drawn.arrows.keys)
        #expect(folders.subtracting(drawnModules).isEmpty, "modules with no line of their own in the drawing")
    }

    @Test func theServingBinaryReachesNeitherFoundationNorArgumentParser() throws {
        let (_, imported) = try graphs()
        let heavy: Set<String> = [
            "Foundation", "FoundationEssentials", "FoundationNetworking", "FoundationInternationalization",
            "ArgumentParser",
        ]
        let reached = imported.closure(of: "blemu")
        #expect(reached.contains("Serving"), "the graph was read: blemu imports Serving")
        #expect(reached.isDisjoint(with: heavy), "blemu reaches \(reached.intersection(heavy).sorted())")
    }

    /// blemu-cli uses FoundationEssentials at most: any symbol of swift-corelibs-foundation's `Foundation` links its
    /// ICU data into the binary (about 44 MB: docs/install.md, "Size"), and FoundationNetworking libcurl,
    /// whatever the file imports says.
    @Test func theCommandLineBinaryReachesNoCoreLibsFoundation() throws {
        let (_, imported) = try graphs()
        let heavy: Set<String> = ["Foundation", "FoundationNetworking", "FoundationInternationalization"]
        let reached = imported.closure(of: "BlemuCLI")
        #expect(reached.isSuperset(of: ["Lab", "LiveView"]), "the graph was read: BlemuCLI imports Lab and LiveView")
        #expect(reached.isDisjoint(with: heavy), "BlemuCLI reaches \(reached.intersection(heavy).sorted())")
    }

    /// The reader itself: a file's head ends at its first declaration, so a script in a string literal is no import.
    @Test func onlyTheHeadOfAFileImports() {
        let text = """
            // A comment.
            import LocalIO
            @testable import Lab
            #if canImport(Glibc)
            import Glibc
            #endif
            public import struct Logging.Logger

            let script = \"""
            import os
            \"""
            """
        #expect(ModuleGraph.headImports(text) == ["LocalIO", "Lab", "Glibc", "Logging"])
    }

    /// The drawing's reader: remarks, continuation lines and modules with no arrow.
    @Test func theDrawingReadsContinuationsAndRemarks() throws {
        let document = """
            ## Modules, as really imported

            ```
            LocalIO                 (imports nothing)
            Serving ─► LocalIO, Logging   (a remark, with a ─► in it)
            BlemuCLI ─► Serving,
                        LocalIO
            ```
            """
        let graph = try ModuleGraph(drawing: document)
        #expect(
            graph.arrows == ["LocalIO": [], "Serving": ["LocalIO", "Logging"], "BlemuCLI": ["Serving", "LocalIO"]])
        #expect(graph.closure(of: "BlemuCLI") == ["Serving", "LocalIO", "Logging"])
    }
}
