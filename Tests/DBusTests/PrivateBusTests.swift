import BlueZTesting
import Foundation
import Testing

/// The private bus's daemon, as the bus-level suites start dozens of them side by side.
@Suite(.enabled(if: PrivateBus.isAvailable, "needs dbus-daemon"))
struct PrivateBusTests {
    /// A daemon that inherited another test's pipe kept it open for as long as it lived, and that test, reading its
    /// child's output to the end, waited for ever (a whole `swift test` hung so).
    @Test func theDaemonHoldsNoneOfTheTestProcesssDescriptors() throws {
        var ends: [Int32] = [-1, -1]
        // Without close-on-exec, as Foundation's Pipe makes them.
        try #require(pipe(&ends) == 0)
        defer { for end in ends { close(end) } }
        let bus = try PrivateBus()
        defer { bus.stop() }
        let ours = Set(ends.map { Self.target("/proc/self/fd/\($0)") })
        let held = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(bus.pid)/fd").map {
            Self.target("/proc/\(bus.pid)/fd/\($0)")
        }
        #expect(held.count >= 3, "the daemon's descriptors could not be read: \(held)")
        #expect(ours.isDisjoint(with: held), "\(held)")
    }

    /// What a descriptor's link names: `pipe:[inode]`, a path, a socket.
    static func target(_ link: String) -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) ?? "?"
    }
}
