import Glibc
import LocalIO

/// Asks a `blemu run --control` socket for `count` notifications of `id` in one line (`notify` with `count`, what
/// `blemu ctl SOCK notify ID --count N` sends), on a thread of its own: the calls block, and the cooperative pool
/// must stay free for the fake's D-Bus replies. Nil when the answer was ok. One command per notification instead
/// measures the socket and JSON, not the notification path (about 3-5k/s here).
func notifyThroughControlSocket(_ path: String, id: String, count: Int) async -> String? {
    await withCheckedContinuation { continuation in
        startThread {
            let line = "{\"command\":\"notify\",\"id\":\"\(id)\",\"count\":\(count)}"
            continuation.resume(returning: sendLines(path, line: line, times: 1))
        }
    }
}

/// Sends `line` `times` times, 32 at a time (reading the 32 answers before the next window, so neither side can
/// fill the other's buffer); nil when every answer was ok.
private func sendLines(_ path: String, line text: String, times count: Int) -> String? {
    let fd: Int32
    switch connectUnix(path) {
    case .success(let connected): fd = connected
    case .failure(let error): return error.reason
    }
    defer { close(fd) }
    let line = Array((text + "\n").utf8)
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    var sent = 0
    while sent < count {
        let window = min(32, count - sent)
        let batch = Array((0..<window).map { _ in line }.joined())
        var offset = 0
        while offset < batch.count {
            let written = batch[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return "send: errno \(errno)" }
            offset += written
        }
        var answers = 0
        while answers < window {
            let got = recv(fd, &buffer, buffer.count, 0)
            guard got > 0 else { return "the control socket closed after \(sent + answers) answers" }
            pending += buffer[0..<got]
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let answer = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeSubrange(...end)
                guard answer.contains("\"ok\":true") else { return "notify refused: \(answer)" }
                answers += 1
            }
        }
        sent += window
    }
    return nil
}

/// The value of `key` in the answer to one `counters` command on the control socket (docs/control-and-events.md),
/// or nil when the socket or the answer fails.
func controlCounter(_ path: String, key: String) async -> Int? {
    await withCheckedContinuation { continuation in
        startThread { continuation.resume(returning: readCounter(path, key: key)) }
    }
}

private func readCounter(_ path: String, key: String) -> Int? {
    guard case .success(let fd) = connectUnix(path) else { return nil }
    defer { close(fd) }
    let request = Array("{\"command\":\"counters\"}\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
        return nil
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while !answer.contains(UInt8(ascii: "\n")) {
        let got = recv(fd, &buffer, buffer.count, 0)
        guard got > 0 else { return nil }
        answer += buffer[0..<got]
    }
    // The answer is one flat JSON object of integers under "counters": the digits after `"key":` are the value
    // (no Foundation in the harness for one number).
    let text = String(decoding: answer, as: UTF8.self)
    guard text.contains("\"ok\":true"), let range = text.range(of: "\"\(key)\":") else { return nil }
    return Int(text[range.upperBound...].prefix { $0.isNumber })
}

/// A handler on a `blemu run --control` socket (docs/control-and-events.md, "Handlers") that claims `id`'s reads and
/// writes and answers each request at once with `{"answer":N}`: what blemu pays for a handler round trip, the
/// handler's own work being this process's and not counted. Returns the connection (close it to detach the handler)
/// once the claim holds, or why it did not.
func attachAnsweringHandler(_ path: String, id: String) -> Result<Int32, BenchError> {
    let fd: Int32
    switch connectUnix(path) {
    case .success(let connected): fd = connected
    case .failure(let error): return .failure(BenchError(error.reason))
    }
    let claim = Array("{\"command\":\"handle\",\"id\":\"\(id)\"}\n".utf8)
    var pending: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    guard claim.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == claim.count else {
        close(fd)
        return .failure(BenchError("handle: send failed"))
    }
    while !pending.contains(UInt8(ascii: "\n")) {
        let got = recv(fd, &buffer, buffer.count, 0)
        guard got > 0 else {
            close(fd)
            return .failure(BenchError("handle: closed before the claim's answer"))
        }
        pending += buffer[0..<got]
    }
    let end = pending.firstIndex(of: UInt8(ascii: "\n"))!
    guard String(decoding: pending[..<end], as: UTF8.self).contains("\"ok\":true") else {
        close(fd)
        return .failure(BenchError("handle refused: \(String(decoding: pending[..<end], as: UTF8.self))"))
    }
    pending.removeSubrange(...end)
    let leftover = pending
    startThread {
        var pending = leftover
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeSubrange(...end)
                // `{"request":N,...}`: the digits after the key are N (no Foundation in the harness for one number).
                guard let range = line.range(of: "\"request\":") else { continue }
                let number = line[range.upperBound...].prefix { $0.isNumber }
                let answer = Array("{\"answer\":\(number)}\n".utf8)
                guard answer.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 else {
                    return
                }
            }
            let got = recv(fd, &buffer, buffer.count, 0)
            guard got > 0 else { return }
            pending += buffer[0..<got]
        }
    }
    return .success(fd)
}

/// Why a Unix socket could not be reached.
private struct SocketFailure: Error {
    let reason: String
}

/// A connected Unix stream socket to `path`; the caller closes it.
private func connectUnix(_ path: String) -> Result<Int32, SocketFailure> {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return .failure(SocketFailure(reason: "socket: errno \(errno)")) }
    guard let address = SocketCalls.unixAddress(path) else {
        close(fd)
        return .failure(SocketFailure(reason: "\(path): path too long"))
    }
    guard SocketCalls.connect(fd, to: address) else {
        let reason = "connect \(path): errno \(errno)"
        close(fd)
        return .failure(SocketFailure(reason: reason))
    }
    return .success(fd)
}

/// Runs `body` on a new detached thread.
private func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(
        &thread, nil,
        { argument in
            let box = Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue()
            box.body()
            return nil
        }, box)
    if status == 0 {
        pthread_detach(thread)
    } else {
        Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
    }
}
