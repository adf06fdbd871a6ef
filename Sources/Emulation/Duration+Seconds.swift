extension Duration {
    /// The duration in seconds as a double, for generators that compute with time (sine, replay, ramps).
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
