import Resilience
import ResilienceTesting

/// Brooker's contention model ("Exponential Backoff And Jitter", AWS Architecture
/// Blog, 2015), driven by the library's own backoff and jitter.
///
/// `clients` clients each want to update one record guarded by optimistic
/// concurrency. A client reads the record's version, then writes with that
/// version; the write succeeds only if nobody wrote in between. A client whose
/// write failed waits one network hop plus its backoff delay and starts over with
/// a new read. Every hop takes |N(10 ms, 2 ms)|. A trial ends when every client has
/// written; the figures are the number of write calls and the time of the last
/// reply, averaged over `trials` trials.
///
/// Each client's delays come from a ``RetryDelays`` sequence (the library's
/// ``Backoff`` and ``Jitter`` code, the same that ``RetryPolicy`` draws from) with
/// its own seeded generator, so a trial is repeatable.
struct ContentionSimulation: Sendable {
    /// A backoff schedule under test.
    struct Schedule: Sendable {
        /// The name in tables and JSON: `none`, `exponential`, `full`, `equal`, `decorrelated`, `default`.
        var name: String
        /// The backoff before jitter.
        var backoff: Backoff
        /// The jitter.
        var jitter: Jitter
    }

    /// Clients racing for the record.
    var clients = 100
    /// Trials averaged.
    var trials = 100
    /// The per-hop delay.
    var network = NetworkDelay.anchors
    /// The seed every random stream derives from.
    var seed: UInt64

    /// Brooker's base of 5 ms and cap of 2 s.
    ///
    /// His simulator computes the un-jittered delay as `min(cap, base * 2^n)` with
    /// `n` starting at 1 for the first retry, so his first retry waits up to 10 ms;
    /// the library's ``Backoff`` counts from 0, so the same schedule is
    /// `.exponential(initial: 10 ms, maximum: 2 s)`. Decorrelated jitter grows from
    /// the base itself (`random(base, previous * 3)` from `previous = base`), so it
    /// takes `initial: 5 ms`. With this mapping the model reproduces the reference
    /// figures of an independent re-run (`ContentionReference`); Docs/Benchmarks.md also gives the figures with `initial: 5 ms`.
    static let base = Duration.milliseconds(5)
    /// The cap.
    static let cap = Duration.seconds(2)
    /// Brooker's `min(cap, base * 2^n)` from `n = 1`, in the library's terms.
    static let brookerExponential = Backoff.exponential(initial: Self.base * 2, maximum: Self.cap)
    /// The backoff decorrelated jitter reads its base and cap from.
    static let decorrelatedBase = Backoff.exponential(initial: Self.base, maximum: Self.cap)

    /// The six schedules of the table, in order.
    static let schedules: [Schedule] = [
        Schedule(name: "none", backoff: .constant(.zero), jitter: .none),
        Schedule(name: "exponential", backoff: Self.brookerExponential, jitter: .none),
        Schedule(name: "full", backoff: Self.brookerExponential, jitter: .full),
        Schedule(name: "equal", backoff: Self.brookerExponential, jitter: .equal),
        Schedule(name: "decorrelated", backoff: Self.decorrelatedBase, jitter: .decorrelated),
        Schedule(name: "default", backoff: Self.brookerExponential, jitter: .default),
    ]

    /// Runs every trial of `schedule`.
    func run(_ schedule: Schedule) -> ContentionResult {
        var calls = 0
        var completion = 0.0
        for trial in 0..<self.trials {
            let outcome = self.runTrial(schedule, trial: trial)
            calls += outcome.calls
            completion += outcome.completion
        }
        return ContentionResult(
            schedule: schedule.name,
            calls: Double(calls) / Double(self.trials),
            completionMilliseconds: completion / Double(self.trials) * 1_000)
    }

    private struct Event: Comparable {
        enum Kind {
            case readArrives
            case readReplyArrives(version: Int)
            case writeArrives(version: Int)
            case writeReplyArrives(succeeded: Bool)
        }

        var time: Double
        var sequence: Int
        var client: Int
        var kind: Kind

        static func < (lhs: Event, rhs: Event) -> Bool {
            (lhs.time, lhs.sequence) < (rhs.time, rhs.sequence)
        }

        static func == (lhs: Event, rhs: Event) -> Bool {
            lhs.time == rhs.time && lhs.sequence == rhs.sequence
        }
    }

    private func runTrial(_ retrySchedule: Schedule, trial: Int) -> (calls: Int, completion: Double) {
        var network = SeedDerivation.generator(self.seed, 1, trial)
        var delays = (0..<self.clients).map { client in
            RetryDelays(
                backoff: retrySchedule.backoff, jitter: retrySchedule.jitter,
                generator: SeedDerivation.generator(self.seed, 2, trial, client))
        }
        var queue = MinHeap<Event>()
        var sequence = 0
        func schedule(_ kind: Event.Kind, for client: Int, at time: Double) {
            sequence += 1
            queue.insert(Event(time: time, sequence: sequence, client: client, kind: kind))
        }

        var version = 0
        var calls = 0
        var now = 0.0
        for client in 0..<self.clients {
            schedule(.readArrives, for: client, at: self.network.seconds(using: &network))
        }
        while let event = queue.removeMinimum() {
            now = event.time
            let hop = self.network.seconds(using: &network)
            switch event.kind {
            case .readArrives:
                schedule(.readReplyArrives(version: version), for: event.client, at: now + hop)
            case .readReplyArrives(let read):
                schedule(.writeArrives(version: read), for: event.client, at: now + hop)
            case .writeArrives(let expected):
                calls += 1
                let succeeded = expected == version
                if succeeded { version += 1 }
                schedule(.writeReplyArrives(succeeded: succeeded), for: event.client, at: now + hop)
            case .writeReplyArrives(let succeeded):
                if !succeeded {
                    let backoff = delays[event.client].next()!.nanoseconds / 1e9
                    schedule(.readArrives, for: event.client, at: now + hop + backoff)
                }
            }
        }
        return (calls, now)
    }
}

/// The mean figures of one schedule.
struct ContentionResult: Sendable {
    /// The schedule's name.
    var schedule: String
    /// Write calls per trial, on average.
    var calls: Double
    /// Time until the last client's write succeeded, on average, in milliseconds.
    var completionMilliseconds: Double
}
