/// Whether the device can reach the network, as a ``ConnectivityMonitor`` reports it.
///
/// A struct rather than an enum so that finer states (a constrained or expensive
/// path, say) can be added without breaking a `switch`.
public struct Connectivity: Sendable, Hashable, CustomStringConvertible {
    /// Whether a network path is available.
    public let isOnline: Bool

    /// Creates a connectivity state.
    public init(isOnline: Bool) {
        self.isOnline = isOnline
    }

    /// A network path is available.
    public static let online = Connectivity(isOnline: true)
    /// No network path is available.
    public static let offline = Connectivity(isOnline: false)

    /// `online` or `offline`.
    public var description: String { self.isOnline ? "online" : "offline" }
}
