import Dispatch
import Serving

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `blemu`: the command people type, and the process that serves. `blemu run FILE --option value...`, as blemu-cli
// writes it (RunOptions.arguments), is served here: no ArgumentParser, no Foundation, so about half the memory and
// start-up the CLI needed as one binary (Benchmarks/README.md). Every other command line, and any other spelling of
// `run` (options first, `--option=value`, `-v`, `--help`, a mistake), goes to blemu-cli, which parses it and, for
// `run`, hands it back.
//
// This top level stays synchronous, so the hand-over to blemu-cli execs from the process's first thread (see
// BlemuCLI/main.swift: from another thread /proc/PID/stat says Z while the kernel moves the process id); serving
// runs in a task.
let arguments = Array(CommandLine.arguments.dropFirst())
let handedOver = Handover.takeMarker()
if arguments.first == "run" {
    do {
        let options = try RunOptions(arguments: arguments.dropFirst(), handedOver: handedOver)
        Task {
            do throws(ExitStatus) { try await DeviceRun(options).run() } catch { exit(error.code) }
            exit(ExitStatus.success.code)
        }
        dispatchMain()
    } catch {
        // blemu-cli writes only what RunOptions reads: failing here is a bug, not a user's mistake, and handing it
        // back would loop.
        if handedOver {
            Console.error("blemu: internal error: blemu-cli handed over a command line blemu cannot read: \(error)")
            exit(ExitStatus.software.code)
        }
    }
}
guard let commands = Handover.locate(Handover.commands) else {
    Console.error("blemu: blemu-cli is not installed beside blemu (nor in ../libexec/blemu); reinstall blemu")
    exit(ExitStatus.software.code)
}
let reason = Handover.exec(commands, arguments)
Console.error("blemu: cannot run \(commands): \(reason)")
exit(ExitStatus.software.code)
