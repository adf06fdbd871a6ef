internal import CDBus
import Glibc
import Logging
import Synchronization

// What ConnectionCore hands libdbus: the C callbacks (each finds the core from its user data and calls it on the
// loop thread), the constants of dbus-protocol.h and dbus-connection.h it reads, and its counters.

/// Message types from the D-Bus specification ("Message Format"), the values of libdbus's
/// `DBUS_MESSAGE_TYPE_*`.
enum MessageType {
    static let methodCall: Int32 = 1
    static let methodReturn: Int32 = 2
    static let error: Int32 = 3
    static let signal: Int32 = 4
}

/// The filter libdbus calls for every message; `userData` is the unretained core (the loop thread, the only
/// caller, holds a strong reference while it runs).
func handleMessageFromLibdbus(
    _ connection: OpaquePointer?, _ message: OpaquePointer?, _ userData: UnsafeMutableRawPointer?
) -> DBusHandlerResult {
    guard let message, let userData else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    Unmanaged<ConnectionCore>.fromOpaque(userData).takeUnretainedValue().handle(message)
    return DBUS_HANDLER_RESULT_HANDLED
}

/// Watch flags from dbus-connection.h (`DBusWatchFlags`), as the unsigned values libdbus's functions take.
enum WatchFlag {
    static let readable: UInt32 = 1
    static let writable: UInt32 = 2
    static let error: UInt32 = 4
    static let hangup: UInt32 = 8
}

func connectionCore(_ data: UnsafeMutableRawPointer?) -> ConnectionCore {
    Unmanaged<ConnectionCore>.fromOpaque(data!).takeUnretainedValue()
}
func addWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    if let watch { connectionCore(data).add(watch: watch) }
    return 1
}
func removeWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    if let watch { connectionCore(data).remove(watch: watch) }
}
// Enabled state is read from the watch at every poll, so toggling needs no bookkeeping.
func toggleWatch(_ watch: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {}
func addTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> dbus_bool_t {
    if let timeout { connectionCore(data).add(timeout: timeout) }
    return 1
}
func removeTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    if let timeout { connectionCore(data).remove(timeout: timeout) }
}
func toggleTimeout(_ timeout: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    if let timeout { connectionCore(data).toggle(timeout: timeout) }
}

/// CLOCK_MONOTONIC in nanoseconds: cheap, no Foundation, immune to wall-clock changes.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
}

/// Call and reply counters, readable from any thread.
final class Counters: Sendable {
    let callsReceived = Atomic<Int>(0)
    let callsAnswered = Atomic<Int>(0)
    let repliesSent = Atomic<Int>(0)
    let droppedCalls = Atomic<Int>(0)
    let callsSent = Atomic<Int>(0)
    let repliesReceived = Atomic<Int>(0)
    let signalsReceived = Atomic<Int>(0)
}
