@_spi(Backend) import Peripheral

extension Central {
    /// The id of the central that stands for every subscriber of a characteristic, where bluetoothd's updates reach
    /// them all at once: `StartNotify` (no device, `PropertiesChanged` to every subscriber) and 5.66-5.68's one
    /// `AcquireNotify` socket per characteristic (`NotifyTable`). Updates to it are sent once, to everyone.
    public static let allSubscribersID = "*"
}
