import Serving

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `blemu run` parses and checks its options, then replaces itself with this program (execv), handing them over
// as RunOptions.arguments: the process that serves links neither ArgumentParser nor Foundation (issue 14).
let options: RunOptions
do {
    options = try RunOptions(arguments: CommandLine.arguments.dropFirst())
} catch {
    Console.error("blemu-serve: \(error); it serves what `blemu run` hands it: run `blemu run --help`")
    exit(ExitStatus.usage.code)
}
do {
    try await DeviceRun(options).run()
} catch {
    exit(error.code)
}
