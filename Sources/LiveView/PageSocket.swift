import FlyingFox

/// One page's WebSocket: what the watcher sends goes to the page, and what the page sends (commands) goes to the
/// watcher. When the page goes away, the watcher forgets it at once.
struct PageSocket: WSMessageHandler {
    /// The device's watcher, shared by every page.
    let watcher: DeviceWatcher

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let (id, messages) = await watcher.attach()
        let watcher = watcher
        Task {
            for await message in client {
                if case .text(let text) = message { await watcher.received(text, from: id) }
            }
            await watcher.detach(id)
        }
        return messages
    }
}
