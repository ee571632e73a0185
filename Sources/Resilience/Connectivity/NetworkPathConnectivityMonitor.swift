#if canImport(Network)
    import Dispatch
    import Network

    /// A ``ConnectivityMonitor`` over the Network framework's `NWPathMonitor`.
    ///
    /// It starts monitoring when created and stops when released. The device is
    /// online when the path's status is `satisfied`.
    ///
    /// ```swift
    /// let network = ConnectivityWait(monitor: NetworkPathConnectivityMonitor(), limit: .seconds(300))
    /// ```
    public final class NetworkPathConnectivityMonitor: ConnectivityMonitor {
        private struct State {
            var connectivity: Connectivity
            var nextID: UInt64 = 0
            var continuations: [UInt64: AsyncStream<Connectivity>.Continuation] = [:]
        }

        private let monitor: NWPathMonitor
        private let state: Lock<State>

        /// Starts monitoring every interface, or only those of `interfaceType`.
        ///
        /// - Parameters:
        ///   - interfaceType: The interface type a path must use, or `nil` for any.
        ///   - queue: The queue the monitor reports on.
        public init(
            requiring interfaceType: NWInterface.InterfaceType? = nil,
            queue: DispatchQueue = DispatchQueue(label: "Resilience.NetworkPathConnectivityMonitor")
        ) {
            let monitor = interfaceType.map { NWPathMonitor(requiredInterfaceType: $0) } ?? NWPathMonitor()
            let state = Lock(State(connectivity: Self.connectivity(of: monitor.currentPath)))
            monitor.pathUpdateHandler = { path in
                let connectivity = Self.connectivity(of: path)
                let continuations = state.withLock { state in
                    state.connectivity = connectivity
                    return Array(state.continuations.values)
                }
                for continuation in continuations {
                    continuation.yield(connectivity)
                }
            }
            self.monitor = monitor
            self.state = state
            monitor.start(queue: queue)
        }

        deinit {
            self.monitor.cancel()
            let continuations = self.state.withLock { state in
                defer { state.continuations.removeAll() }
                return Array(state.continuations.values)
            }
            for continuation in continuations {
                continuation.finish()
            }
        }

        /// The connectivity the monitor last reported.
        public var connectivity: Connectivity {
            self.state.withLock { $0.connectivity }
        }

        /// A stream of the connectivity, beginning with the state now and then each change.
        public func connectivityUpdates() -> AsyncStream<Connectivity> {
            let (stream, continuation) = AsyncStream.makeStream(
                of: Connectivity.self, bufferingPolicy: .bufferingNewest(1))
            let state = self.state
            let (id, now) = state.withLock { state in
                state.nextID += 1
                state.continuations[state.nextID] = continuation
                return (state.nextID, state.connectivity)
            }
            continuation.onTermination = { _ in
                _ = state.withLock { $0.continuations.removeValue(forKey: id) }
            }
            continuation.yield(now)
            return stream
        }

        private static func connectivity(of path: NWPath) -> Connectivity {
            path.status == .satisfied ? .online : .offline
        }
    }
#endif
