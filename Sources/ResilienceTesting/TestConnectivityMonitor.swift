public import Resilience

/// A `ConnectivityMonitor` that a test switches online and offline by hand.
///
/// Tests wait for the code under test to start waiting for the network with
/// ``waitForObservers(count:)``, an explicit synchronization point, then move
/// the ``TestClock`` or call ``set(_:)``.
///
/// ```swift
/// let clock = TestClock()
/// let network = TestConnectivityMonitor(.offline)
/// let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
/// let call = Task {
///     try await policy.execute(waitingFor: ConnectivityWait(monitor: network, limit: .seconds(600))) {
///         try await api.feed()
///     }
/// }
/// await network.waitForObservers(count: 1)  // the first attempt failed offline; the call waits
/// clock.advance(by: .seconds(300))
/// network.set(.online)                      // the second attempt runs now
/// ```
public final class TestConnectivityMonitor: ConnectivityMonitor {
    private struct State: CountWaiting {
        var connectivity: Connectivity
        var nextID: UInt64 = 0
        var observers: [UInt64: AsyncStream<Connectivity>.Continuation] = [:]
        var observersEver = 0
        var countWaiters = CountWaiters()

        func count(_ measure: CountWaiters.Measure) -> Int {
            measure == .current ? self.observers.count : self.observersEver
        }
    }

    private let state: Lock<State>

    /// Creates a monitor reporting `connectivity`; online unless given.
    public init(_ connectivity: Connectivity = .online) {
        self.state = Lock(State(connectivity: connectivity))
    }

    /// The connectivity the test set last.
    public var connectivity: Connectivity {
        self.state.withLock { $0.connectivity }
    }

    /// The number of streams open now: the calls waiting for the network.
    public var observerCount: Int {
        self.state.withLock { $0.observers.count }
    }

    /// The number of streams requested since the monitor was made.
    public var updateRequestCount: Int {
        self.state.withLock { $0.observersEver }
    }

    /// Reports `connectivity` to every stream, if it differs from the state now.
    public func set(_ connectivity: Connectivity) {
        let observers: [AsyncStream<Connectivity>.Continuation] = self.state.withLock { state in
            guard state.connectivity != connectivity else { return [] }
            state.connectivity = connectivity
            return Array(state.observers.values)
        }
        for observer in observers {
            observer.yield(connectivity)
        }
    }

    /// A stream of the connectivity, beginning with the state now and then each change ``set(_:)`` makes.
    public func connectivityUpdates() -> AsyncStream<Connectivity> {
        let (stream, continuation) = AsyncStream.makeStream(of: Connectivity.self)
        let (id, now, ready) = self.state.withLock { state in
            state.nextID += 1
            state.observersEver += 1
            state.observers[state.nextID] = continuation
            return (state.nextID, state.connectivity, state.satisfiedWaiters())
        }
        continuation.onTermination = { [state] _ in
            _ = state.withLock { $0.observers.removeValue(forKey: id) }
        }
        continuation.yield(now)
        for waiter in ready { waiter.resume() }
        return stream
    }

    /// Suspends until at least `count` streams are open, or the waiting task is cancelled.
    ///
    /// A call through a policy opens one stream when it starts to wait for the
    /// network and closes it when the wait ends.
    public func waitForObservers(count: Int = 1) async {
        await self.state.wait(until: count, measuring: .current)
    }

    /// Suspends until at least `count` streams have been requested since the monitor was made,
    /// or the waiting task is cancelled.
    ///
    /// Use it when a stream from an earlier wait may still be open, so that the
    /// count of open streams cannot tell the waits apart.
    public func waitForUpdateRequests(count: Int) async {
        await self.state.wait(until: count, measuring: .total)
    }
}
