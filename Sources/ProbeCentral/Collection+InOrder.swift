extension Collection where Element: Equatable {
    /// Whether `wanted` appears in this collection in order, other elements allowed between (a subsequence): a
    /// notification the central waits for may arrive among a schedule's own.
    func containsInOrder(_ wanted: some Sequence<Element>) -> Bool {
        var rest = self[...]
        for value in wanted {
            guard let found = rest.firstIndex(of: value) else { return false }
            rest = rest[rest.index(after: found)...]
        }
        return true
    }
}
