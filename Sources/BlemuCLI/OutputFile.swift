import ArgumentParser
import Foundation
import Serving

/// The files the commands write (`clone`'s profile, recordings and report, `verify --junit`): whole or not at all.
enum OutputFile {
    /// Writes `text` next to `path` and renames it into place, so the file appears whole or not at all;
    /// `cannotCreate` after saying why.
    static func write(_ text: String, to path: String) throws {
        let temporary = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
            guard rename(temporary, path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            Console.error("blemu: cannot write \(path): \(error.localizedDescription)")
            throw ExitCode.cannotCreate
        }
    }
}
