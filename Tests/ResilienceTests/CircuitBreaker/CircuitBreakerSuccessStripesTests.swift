import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// A time window's successes counted without the lock go to one counter word until two
/// threads are seen counting at once, then to a stripe per thread; these pin that a single
/// thread stays on the first stripe, and that counts from several threads, in every stripe,
/// reach the window exactly once, also while the lock takes them and publishes anew.
@Suite struct CircuitBreakerSuccessStripesTests {
    /// A time-window breaker whose rule no run of successes can meet, after one success
    /// (through the lock) that publishes the current bucket.
    static func publishedBreaker() async throws -> (CircuitBreaker, CircuitBreakerSuccessStripes) {
        let breaker = try CircuitBreaker(
            name: "stripes",
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 20, window: .time(.seconds(10), buckets: 10)),
            clock: TestClock())
        _ = try await breaker.execute { 1 }
        let stripes = breaker.storage.successStripes
        return (breaker, try #require(stripes))
    }

    /// Counts of successes, shared by the counting threads.
    final class Tally: Sendable {
        let counted = Atomic<Int>(0)
        let refused = Atomic<Int>(0)
    }

    /// `attempts` successes counted without the lock at the breaker's current time, as a
    /// success that finished now would be; each tallied as counted or as sent to the lock.
    static func count(_ attempts: Int, in breaker: CircuitBreaker, into tally: Tally) {
        guard let now = breaker.clock.upperBoundNanoseconds() else { return }
        for _ in 0..<attempts {
            if breaker.storage.countSuccessWithoutLock(atNanoseconds: now) {
                tally.counted.wrappingAdd(1, ordering: .relaxed)
            } else {
                tally.refused.wrappingAdd(1, ordering: .relaxed)
            }
        }
    }

    @Test func oneTaskCountsInTheFirstStripeAlone() async throws {
        let (breaker, stripes) = try await Self.publishedBreaker()
        for _ in 0..<50 { _ = try await breaker.execute { 1 } }
        #expect(breaker.storage.pendingSuccessCount == 50)
        #expect(!stripes.countsInThreadStripes, "no other thread counted in between")
        #expect(breaker.snapshot().recentCalls == 51)
    }

    @Test func aThreadKeepsItsStripe() {
        let stripes = CircuitBreakerSuccessStripes()
        let first = stripes.stripeIndex()
        #expect((0..<CircuitBreakerSuccessStripes.count).contains(first))
        #expect(stripes.stripeIndex() == first)
    }

    @Test func threadsCountingInStripesOfTheirOwnAreAllCounted() async throws {
        let (breaker, stripes) = try await Self.publishedBreaker()
        stripes.separateThreads()
        #expect(breaker.snapshot().recentCalls == 1, "publishes the bucket in every stripe")
        let tally = Tally()
        onSeparateThreads(4) { _ in Self.count(2_500, in: breaker, into: tally) }
        #expect(tally.refused.load(ordering: .relaxed) == 0, "the bucket stayed published")
        #expect(breaker.storage.pendingSuccessCount == 10_000)
        #expect(breaker.snapshot().recentCalls == 10_001)
        #expect(breaker.storage.pendingSuccessCount == 0, "taken into the window")
    }

    /// Threads count while another takes their counts under the lock again and again (each
    /// snapshot takes them and publishes anew): every success counted without the lock is in
    /// the window once, whether the threads count in one word or each in its own stripe.
    @Test(arguments: [false, true])
    func successesCountedWhileTheLockTakesThemAreCountedOnce(apart: Bool) async throws {
        let (breaker, stripes) = try await Self.publishedBreaker()
        if apart {
            stripes.separateThreads()
            _ = breaker.snapshot()
        }
        let tally = Tally()
        onSeparateThreads(5) { thread in
            if thread == 4 {
                for _ in 0..<300 { _ = breaker.snapshot() }
            } else {
                Self.count(5_000, in: breaker, into: tally)
            }
        }
        let counted = tally.counted.load(ordering: .relaxed)
        #expect(counted > 0)
        #expect(counted + tally.refused.load(ordering: .relaxed) == 20_000)
        #expect(breaker.snapshot().recentCalls == 1 + counted)
        #expect(breaker.state == .closed)
    }
}
