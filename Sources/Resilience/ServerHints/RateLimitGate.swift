import Foundation

/// Keeps a client under the quota a server publishes in its `RateLimit` field,
/// so that it waits for the reset instead of running into 429 Too Many Requests.
///
/// Record the field of every response, successful or not; before each request,
/// ask the gate how long to wait. While the last response said quota is left,
/// each request spends one unit of it locally; once none is left, requests wait
/// until the reset the server announced (at most ``maximumWait``). When the
/// server lists several quotas (per minute and per day, say), each request spends
/// a unit of every one, and requests wait for the latest reset among those spent.
/// After its reset a quota is unknown until the next response tells it again.
///
/// Responses do not always arrive in the order their requests were sent: a slow answer
/// to an early request can come after the answer to a later one, and its field tells of
/// the quota before the later request spent it. Record each response with the
/// ``Ticket`` its request went with (``acquire()`` returns it), and the gate keeps what
/// the response to the latest request sent said: a response to a request sent before
/// that one is ignored, and the requests the gate let go after the one a response answers
/// are taken as spent from the quotas it reports (they are not in its count). A response
/// recorded without a ticket counts as the answer to a request sent when it is recorded.
///
/// ```swift
/// let gate = try RateLimitGate()
/// let ticket = try await gate.acquire()             // waits only when the quota is spent
/// let (data, response) = try await session.data(for: request)
/// gate.record(headers: response.allHeaderFields as? [String: String] ?? [:], for: ticket)
/// ```
///
/// The gate holds its state behind a lock that no user code and no wait runs under.
public final class RateLimitGate: Sendable {
    /// The longest wait the gate imposes; a later reset is cut to it.
    public let maximumWait: Duration

    private let clock: ElapsedClock
    private let state = Lock(State())

    private struct State {
        /// Each quota the last response announced, spent locally since; empty when none is known.
        var limits: [Limit] = []
        /// The order of the last ticket issued; the next one is one more.
        var lastIssued: UInt64 = 0
        /// The order of the ticket of the request whose response `limits` came from; `nil`
        /// before any response is recorded.
        var recordedOrder: UInt64?

        /// A ticket for a request sent now: later than every ticket issued before.
        mutating func issue() -> Ticket {
            self.lastIssued += 1
            return Ticket(order: self.lastIssued)
        }
    }

    /// Where a request stands in the order the gate let requests go.
    ///
    /// The gate issues one with each request it lets go (``acquire()``, ``ticket()``);
    /// recording a response with its request's ticket keeps a late answer to an earlier
    /// request from replacing what the answer to a later one said. A ticket is
    /// meaningful to the gate that issued it only.
    public struct Ticket: Sendable, Hashable, Comparable {
        /// The gate's count of tickets issued when this one was: later requests have higher ones.
        let order: UInt64

        /// Whether `lhs` was issued before `rhs`.
        public static func < (lhs: Ticket, rhs: Ticket) -> Bool { lhs.order < rhs.order }
    }

    /// One announced quota.
    private struct Limit {
        /// The quota left, as reported and spent locally since.
        var remaining: Int64
        /// When the quota resets, as elapsed time on the gate's clock; `nil` when not stated.
        var resetAt: Duration?
    }

    /// Creates a gate.
    ///
    /// - Parameters:
    ///   - maximumWait: The longest wait honoured; zero or more, and at most about 146 years.
    ///     Defaults to 60 s.
    ///   - clock: The clock for resets and waits; inject a test clock in tests.
    /// - Throws: ``ConfigurationError`` naming `maximumWait` when it is negative or huge.
    public init(
        maximumWait: Duration = .seconds(60),
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.requireNonNegative(maximumWait, "maximumWait")
        try ConfigurationError.requireAtMostResilienceMaximum(maximumWait, "maximumWait")
        self.maximumWait = maximumWait
        self.clock = ElapsedClock(clock)
    }

    /// Records the `RateLimit` field among `headers` (names compared case-insensitively), if any,
    /// as the answer to a request sent now (see ``record(headers:for:)``).
    public func record(headers: [String: String]) {
        guard let limits = Self.limits(in: headers) else { return }
        self.store(limits, for: nil)
    }

    /// Records the `RateLimit` field among `headers` (names compared case-insensitively), if
    /// any, unless a response to a request sent after `ticket`'s has been recorded.
    ///
    /// - Parameters:
    ///   - headers: The response's header fields.
    ///   - ticket: The ticket of the request the response answers, from this gate.
    public func record(headers: [String: String], for ticket: Ticket) {
        guard let limits = Self.limits(in: headers) else { return }
        self.store(limits, for: ticket)
    }

    /// Records the limits a response announced, replacing what earlier responses said, as
    /// the answer to a request sent now (see ``record(_:for:)``).
    ///
    /// Every quota counts: a request spends one unit of each, and while any quota with a
    /// stated reset is spent, requests wait for the latest such reset (at most
    /// ``maximumWait``). A spent quota whose reset the server did not state holds nothing
    /// back, since the gate cannot tell when it frees. A negative
    /// ``RateLimitHeader/ServiceLimit/remaining`` counts as zero: the quota is spent.
    public func record(_ limits: [RateLimitHeader.ServiceLimit]) {
        self.store(limits, for: nil)
    }

    /// Records the limits the response to the request with `ticket` announced, replacing
    /// what the responses to requests sent before it said, unless a response to a request
    /// sent after it has been recorded: that response knows the quota later, and stands.
    ///
    /// The order is the order in which the requests were sent, not the one in which their
    /// answers arrived: the server counts a request when it gets it, so the answer to a
    /// later request has, as a rule, seen the earlier one spend its unit, while a late
    /// answer to an earlier request tells of the quota as it was before. A reset counted from the
    /// arrival of that late answer would also come later than the server's.
    ///
    /// - Parameters:
    ///   - limits: The service limits the response announced.
    ///   - ticket: The ticket of the request the response answers, from this gate.
    public func record(_ limits: [RateLimitHeader.ServiceLimit], for ticket: Ticket) {
        self.store(limits, for: ticket)
    }

    /// Records `limits` for `ticket`, or for a request sent now when `ticket` is `nil`.
    private func store(_ limits: [RateLimitHeader.ServiceLimit], for ticket: Ticket?) {
        guard !limits.isEmpty else { return }
        let now = self.clock.now()
        let recorded = limits.map {
            Limit(remaining: $0.remaining, resetAt: $0.reset.map { now + $0.clampedToResilienceRange })
        }
        self.state.withLock { state in
            let order = ticket?.order ?? state.issue().order
            // An answer to a request sent before the one already recorded knows less.
            if let known = state.recordedOrder, order < known { return }
            state.recordedOrder = order
            // The requests let go after this one are not in its answer: each spends one unit of
            // every quota, as it did of the quotas known when it went.
            // A negative quota (only a hand-made `ServiceLimit` can hold one) counts as none left.
            let later = Int64(clamping: state.lastIssued &- order)
            state.limits = recorded.map { limit in
                var limit = limit
                let remaining = Swift.max(0, limit.remaining)
                limit.remaining = remaining > later ? remaining - later : 0
                return limit
            }
        }
    }

    /// The service limits of the `RateLimit` field among `headers`, or `nil` when absent or malformed.
    private static func limits(in headers: [String: String]) -> [RateLimitHeader.ServiceLimit]? {
        let value =
            headers[RateLimitHeader.fieldName]
            ?? headers.first { $0.key.caseInsensitiveCompare(RateLimitHeader.fieldName) == .orderedSame }?.value
        return value.flatMap { RateLimitHeader.serviceLimits(parsing: $0) }
    }

    /// Reserves one request: the time to wait before sending it, zero when it may go now.
    ///
    /// A caller that sends the request after this (rather than after ``acquire()``) takes a
    /// ``ticket()`` just before it sends, to record the response with.
    public func reserve() -> Duration {
        self.reserve(issuing: false).wait
    }

    /// A ticket for a request sent now, to record its response with (``record(headers:for:)``).
    ///
    /// ``acquire()`` returns one; take one here when sending after ``reserve()``.
    public func ticket() -> Ticket {
        self.state.withLock { state in state.issue() }
    }

    /// Waits, on the gate's clock, until one request may be sent, and returns the ticket to
    /// record its response with (``record(headers:for:)``).
    ///
    /// - Returns: The request's ticket, issued when it may go.
    /// - Throws: `CancellationError` when the task is cancelled while waiting, or as its wait
    ///   ends (the wait over, the task not yet run on): no ticket, so no request goes.
    @discardableResult
    public func acquire() async throws -> Ticket {
        let (wait, ticket) = self.reserve(issuing: true)
        if let ticket { return ticket }
        try await self.clock.sleepUntil(self.clock.now() + wait)
        // A cancellation that came as the wait ended counts as one during it: no ticket, no request.
        try Task.checkCancellation()
        return self.ticket()
    }

    /// Reserves one request: the wait before it may go, and, when it may go now and
    /// `issuing` asks for one, its ticket, taken under the same lock.
    private func reserve(issuing: Bool) -> (wait: Duration, ticket: Ticket?) {
        let now = self.clock.now()
        return self.state.withLock { state in
            // A quota past its reset is unknown until the next response.
            state.limits.removeAll { limit in limit.resetAt.map { $0 <= now } ?? false }
            let latestSpentReset = state.limits.lazy.filter { $0.remaining <= 0 }.compactMap(\.resetAt).max()
            if let latestSpentReset {
                let wait = Swift.min(latestSpentReset - now, self.maximumWait)
                if wait > .zero { return (wait, nil) }
                return (.zero, issuing ? state.issue() : nil)
            }
            // The request goes: it spends one unit of every quota that has one left.
            for index in state.limits.indices where state.limits[index].remaining > 0 {
                state.limits[index].remaining -= 1
            }
            return (.zero, issuing ? state.issue() : nil)
        }
    }
}
