/// "Did you mean" suggestions: the known name closest to a misspelling by Levenshtein distance.
enum EditDistance {
    /// The number of single-character insertions, deletions and substitutions that turn `a` into `b`.
    static func between(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = Array(repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    /// The longest word worth a suggestion: no SIG name or key comes near it, and past it the comparison would only
    /// cost time (a 1 MB token once took 13 s here).
    static let longestWord = 64

    /// The closest candidate within a third of the word's length (at least 2 edits), or nil when none is close.
    static func closest(to word: String, in candidates: [String]) -> String? {
        guard word.count <= longestWord else { return nil }
        let limit = max(2, word.count / 3)
        let lowered = word.lowercased()
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = between(lowered, candidate)
            if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.name
    }

    /// `did you mean `x`?` for the closest candidate, or nil.
    static func hint(for word: String, in candidates: [String]) -> String? {
        closest(to: word, in: candidates).map { "did you mean `\($0)`?" }
    }

    /// `text` as a diagnostic echoes it: whole up to 60 characters, else its first 60 and how long it was.
    static func echo(_ text: String) -> String {
        text.count <= 60 ? text : "\(text.prefix(60))... (\(text.count) characters)"
    }
}
