/// An async mutex: registrations run one at a time, in arrival order, even across their awaits.
actor SerialGate {
    private var isBusy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    private func acquire() async {
        if isBusy {
            await withCheckedContinuation { waiters.append($0) }
        } else {
            isBusy = true
        }
    }

    private func release() {
        if waiters.isEmpty { isBusy = false } else { waiters.removeFirst().resume() }
    }

    /// Runs `body` when every earlier body has finished.
    nonisolated func serially<T>(_ body: () async throws(BlueZError) -> T) async throws(BlueZError) -> T {
        await acquire()
        do {
            let result = try await body()
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    /// Runs a body that cannot fail when every earlier body has finished.
    nonisolated func serially<T>(_ body: () async -> T) async -> T {
        await acquire()
        let result = await body()
        await release()
        return result
    }
}
