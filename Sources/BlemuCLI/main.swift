import ArgumentParser
import Dispatch
import Serving

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `run` hands over to `blemu` from this, the process's first thread: execve from any other thread makes the kernel
// retire the first thread and move the process id to the caller (de_thread), and meanwhile /proc/PID/stat says Z,
// which a supervisor polling it (the lab's guest stack did) takes for a dead peripheral. So the command line is
// parsed here, synchronously, and a `run` execs before any other thread serves the async commands.
let arguments = RunCommand.withUIAddress(Array(CommandLine.arguments.dropFirst()))
if let command = try? Blemu.parseAsRoot(arguments), let run = command as? RunCommand {
    // Parsed and validated: it only hands over, or says why it cannot and exits 70.
    do { try run.run() } catch { Blemu.exit(withError: error) }
}
// ArgumentParser takes `blemu nonsense --help`, a command this blemu lacks, for the root's help and exits 0; a script
// probing for a command must get a usage error instead.
if let word = CommandLine.arguments.dropFirst().first, let refusal = Blemu.unknownCommand(word) {
    Console.error(refusal)
    exit(64)
}
// Everything else, and every mistake (parsed again, so ArgumentParser says what is wrong as it always did).
Task {
    // ArgumentParser's main exits itself only after a failure.
    await Blemu.main(arguments)
    exit(0)
}
dispatchMain()
