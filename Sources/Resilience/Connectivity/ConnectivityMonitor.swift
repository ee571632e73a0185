/// A source of the device's connectivity, for a ``RetryPolicy`` that waits for the network.
///
/// The library ships `NetworkPathConnectivityMonitor` over `NWPathMonitor` where
/// the Network framework exists, and ResilienceTesting a monitor that tests
/// switch by hand. Adopt it to feed the policy from anything else, such as a
/// reachability library you already use.
///
/// ```swift
/// struct AlwaysOnline: ConnectivityMonitor {
///     var connectivity: Connectivity { .online }
///     func connectivityUpdates() -> AsyncStream<Connectivity> {
///         AsyncStream { continuation in continuation.yield(.online) }
///     }
/// }
/// ```
public protocol ConnectivityMonitor: Sendable {
    /// The connectivity now, as last reported.
    var connectivity: Connectivity { get }

    /// A stream of the connectivity, beginning with the state now and then each change.
    ///
    /// Each call returns a new stream. The policy stops iterating (and the stream
    /// should release what it holds) when the wait ends or its task is cancelled.
    func connectivityUpdates() -> AsyncStream<Connectivity>
}
