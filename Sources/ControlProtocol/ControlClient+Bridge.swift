extension ControlClient {
    /// Sends `request`, then carries lines both ways until either side ends: each line the server sends goes to
    /// `line`, and whatever is read from `input` (a descriptor: standard input, a pipe) is sent as it is. For
    /// `handle`, whose requests come out and whose answers go in, so a handler can be any program that reads and
    /// writes lines (`blemu ctl SOCKET handle ID` in a shell's `coproc`). Returns `.inputClosed` or `.closed`; throws
    /// `Unreachable` when the socket cannot be reached or closes before the first line.
    public func bridge(
        _ request: [String: JSONValue], input: Int32, line: (String) -> Void
    ) throws(Unreachable)
        -> StreamEnd
    {
        try stream(request, deadline: nil, input: input) { text in
            line(text)
            return true
        }
    }
}
