import Foundation
import Testing

@testable import BlueZ

/// `blemu clone`'s header names bluetoothd's version: the first line a program's `--version` prints, read without
/// Foundation's `Process` (which hung in the lab's guest).
struct BluetoothdVersionTests {
    /// A script at a fresh path that runs `body`; removed with its directory by the caller.
    static func script(_ body: String) throws -> (path: String, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blemu-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("bluetoothd").path
        // Written through a close-on-exec descriptor: one a child of another test inherited would hold the script
        // open for writing, and running it would fail with ETXTBSY for as long as that child lives.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { close(fd) }
        let text = Array("#!/bin/sh\n\(body)\n".utf8)
        guard text.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == text.count else {
            throw CocoaError(.fileWriteUnknown)
        }
        return (path, directory)
    }

    @Test func theFirstLineOfASuccessfulRunIsTheVersion() throws {
        let (path, directory) = try Self.script(#"[ "$1" = --version ] && printf '5.82\nmore\n' && echo noise >&2"#)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(BluetoothdVersion.firstLine(of: path) == "5.82")
    }

    @Test func aFailingMissingOrSilentProgramHasNoVersion() throws {
        let (failing, directory) = try Self.script("echo 5.82; exit 1")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(BluetoothdVersion.firstLine(of: failing) == nil)
        #expect(BluetoothdVersion.firstLine(of: directory.appendingPathComponent("absent").path) == nil)
        let (silent, other) = try Self.script("exit 0")
        defer { try? FileManager.default.removeItem(at: other) }
        #expect(BluetoothdVersion.firstLine(of: silent) == nil)
    }

    /// Only a program named bluetoothd is run for its version: the bus owner can be anything (a test's stand-in).
    @Test func onlyAProgramNamedBluetoothdIsAsked() throws {
        let (path, directory) = try Self.script("echo 9.99")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(BluetoothdVersion.isBluetoothd(path))
        let other = directory.appendingPathComponent("stand-in").path
        let link = directory.appendingPathComponent("exe").path
        try FileManager.default.createSymbolicLink(atPath: other, withDestinationPath: "/bin/true")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        #expect(!BluetoothdVersion.isBluetoothd(other))
        #expect(BluetoothdVersion.isBluetoothd(link), "a link to bluetoothd, as /proc/PID/exe is")
    }
}
