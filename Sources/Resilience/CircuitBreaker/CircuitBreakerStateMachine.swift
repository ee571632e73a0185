/// The pure transition logic of a ``CircuitBreaker``: closed, open, half-open
/// and isolated, with the trip rule, the open-time schedule, half-open probe
/// slots with leases, and a generation counter.
///
/// A value with no locks, no clock and no awaits: every method takes the time
/// as a `Duration` elapsed on the breaker's clock and returns what happened
/// (an admission decision, a transition) for the caller to act on after it
/// has released its lock. Tests drive it with plain instants.
///
/// Time never goes backwards here: a `now` earlier than one already seen is
/// taken as the latest seen, since concurrent callers read the clock before
/// they take the breaker's lock and may arrive in a different order. Such a
/// reading cannot tell a late caller from a clock that went back, so the machine
/// alone would wait for such a clock to pass its latest time again, holding an
/// open breaker open for the jump on top of its open time. ``rebase(from:to:)``
/// is the way out, as for the rate limiter: given a reading known to have been
/// taken after the machine's latest time was seen (the caller reads the clock
/// again), one still behind it proves the jump, and the machine adds the jump to
/// ``offset``, which it adds to every reading from then on: the jump counts as no
/// time elapsed, and every mark (the open time's end, probe leases, the time
/// window's buckets) stays where it was on the machine's own time line, which
/// never goes back. The times it reports (a snapshot's, a transition's) are on
/// that line: behind the clock's readings by the jumps.
///
/// Every transition bumps ``generation``; a permit records the generation it
/// was granted in, and a result recorded with an older generation is ignored,
/// so a slow call from a previous state can never trip, close or re-open the
/// breaker in its current one.
package struct CircuitBreakerStateMachine: Sendable {
    /// Where the breaker is, with the data that only that state needs.
    package enum Phase: Sendable, Hashable {
        case closed
        case open(until: Duration)
        case halfOpen
        case isolated
    }

    /// What a finished call means to the breaker.
    package enum CallResult: Sendable, Hashable {
        /// The call succeeded (it may still count as a failure if it was slow).
        case success
        /// The call failed in a way that counts; `pushback` is the open time a server hint asks for.
        case failure(pushback: Duration?)
        /// The call's failure does not count (cancelled, a client error).
        case ignored
    }

    /// Whether a call may run.
    package enum Admission: Sendable, Hashable {
        case permitted(CircuitBreakerPermit)
        case rejected(state: CircuitBreakerState, retryAfter: Duration?)
    }

    /// A change of state, for the observer.
    package struct Transition: Sendable, Hashable {
        package var from: CircuitBreakerState
        package var to: CircuitBreakerState
        package var reason: CircuitBreakerTransitionReason
        /// The generation the breaker entered.
        package var generation: UInt64
        package var at: Duration
        /// How long the breaker will stay open, when `to` is open.
        package var openDuration: Duration?
    }

    private struct Probe: Sendable {
        var ticket: UInt64
        var leaseExpiry: Duration
    }

    /// Bit 0 of ``fastPathWord``: the breaker is closed.
    package static let closedBit: UInt64 = CircuitBreakerStorage.closedBit
    /// Bit 1 of ``fastPathWord``: a closed-state success must be recorded (there is a run of failures to reset).
    package static let pendingFailuresBit: UInt64 = CircuitBreakerStorage.pendingFailuresBit
    /// Generations wrap within 62 bits, so they fit in ``fastPathWord`` above the two flag bits.
    private static let generationMask: UInt64 = (1 << 62) - 1

    let configuration: CircuitBreakerConfiguration

    package private(set) var phase: Phase = .closed
    package private(set) var generation: UInt64 = 0
    /// When the breaker last opened or was isolated; `nil` while closed.
    package private(set) var openedAt: Duration?
    /// Trips since the breaker last closed; drives a growing open duration.
    package private(set) var consecutiveTrips = 0
    /// Counted failures in a row while closed.
    package private(set) var consecutiveFailures = 0
    /// Successful probes in the current half-open state.
    package private(set) var successfulProbes = 0
    /// The latest time seen, on the machine's time line (a reading plus ``offset``).
    package private(set) var latest: Duration = .zero
    /// What the machine adds to every reading: the jumps back of the clock it has
    /// re-based onto (``rebase(from:to:)``); zero for a clock that never went back.
    package private(set) var offset: Duration = .zero
    /// How many times the machine re-based onto a clock that went back.
    package private(set) var rebases: UInt64 = 0
    /// The latest re-bases, the one from count `k` kept at `k % rememberedRebases`: the offset
    /// before it, and the time on the machine's line it mapped its reading to. Where a call
    /// started before them is placed on the line.
    private var rebaseHistory: [(offsetBefore: Duration, at: Duration)] = []
    /// How many re-bases ``start(of:)`` places a start across exactly.
    package static let rememberedRebases: UInt64 = 4

    private var window: CircuitBreakerSlidingWindow?
    private var probes: [Probe]
    private var nextTicket: UInt64 = 1

    /// Where a registry's breaker draws its generations from, or `nil` for a breaker of its own.
    private let generations: CircuitBreakerGenerations?

    /// A closed breaker with nothing counted.
    ///
    /// - Parameter generations: The counter of the registry the breaker belongs to, whose
    ///   latest generation it starts in and whose next one each transition takes; `nil` for a
    ///   breaker that numbers its generations from zero, one by one.
    package init(configuration: CircuitBreakerConfiguration, generations: CircuitBreakerGenerations? = nil) {
        self.configuration = configuration
        self.generations = generations
        self.generation = (generations?.current ?? 0) & Self.generationMask
        self.window = configuration.tripRule.window.map(CircuitBreakerSlidingWindow.init)
        self.probes = []
        self.probes.reserveCapacity(Swift.min(configuration.maximumProbes, 16))
    }

    // MARK: - Reading

    /// The public face of ``phase``.
    package var state: CircuitBreakerState {
        switch self.phase {
        case .closed: .closed
        case .open: .open
        case .halfOpen: .halfOpen
        case .isolated: .isolated
        }
    }

    /// The generation and two flags, published in an atomic word so that the
    /// closed-state fast path can admit a call, and skip recording a success
    /// that changes nothing, without the lock.
    package var fastPathWord: UInt64 {
        var word = self.generation << 2
        if self.phase == .closed { word |= Self.closedBit }
        if self.consecutiveFailures > 0 { word |= Self.pendingFailuresBit }
        return word
    }

    /// The time window's current bucket, while closed: the span a success may be counted
    /// in without the lock, and the bucket's epoch; `nil` otherwise.
    ///
    /// A success counted without the lock is never judged against the trip rule, so the
    /// bucket is offered only while no run of successes in it can meet the rule
    /// (``successesCanMeetTripRule(inBucketOf:)``): with a run of failures to reset, or with
    /// failures that a success could bring up to `minimumCalls` at a rate still at the
    /// threshold, every success takes the lock and is judged there. The steady state, a
    /// window with no failures or one past `minimumCalls` and under the threshold, stays
    /// lock-free.
    package var lockFreeSuccessBucket: (start: Duration, end: Duration, epoch: Int128)? {
        guard self.phase == .closed, self.consecutiveFailures == 0, let bucket = self.window?.currentBucket,
            !self.successesCanMeetTripRule(inBucketOf: bucket.epoch)
        else { return nil }
        return bucket
    }

    /// Whether one or more successes counted in the bucket of `epoch`, and nothing else,
    /// could meet the trip rule.
    ///
    /// Successes add calls and no failure, so of every count they could bring the window to,
    /// the rate is highest at the least one the rule looks at: one more call than the window
    /// holds, or `minimumCalls` if that is more. The rate there, worked out as the rule works
    /// it out (the quotient only falls as the calls grow), decides. A window with no failures
    /// never meets a threshold above zero, and one holding `minimumCalls` calls under the
    /// threshold only falls further below it. A slow success is not a success here: it
    /// counts as a failure, and never without the lock.
    private func successesCanMeetTripRule(inBucketOf epoch: Int128) -> Bool {
        guard case .failureRate(let threshold, let minimumCalls, _) = self.configuration.tripRule.kind,
            let totals = self.window?.totals(throughBucketOf: epoch)
        else { return false }
        let calls = Swift.max(totals.calls &+ 1, minimumCalls)
        return Double(totals.failures) / Double(calls) >= threshold
    }

    /// Counts `count` closed-state successes that finished within the bucket of `epoch`,
    /// counted outside the lock while ``lockFreeSuccessBucket`` was published.
    package mutating func addLockFreeSuccesses(_ count: Int, inBucketOf epoch: Int128) {
        guard self.phase == .closed else { return }
        self.window?.addSuccesses(count, inBucketOf: epoch)
    }

    /// Probe slots taken now, counting leases not yet found expired.
    package var probesInFlight: Int {
        self.probes.count
    }

    /// Whether a call admitted with `permit` and finished at `now` was slow under `rule`.
    package static func isSlow(_ permit: CircuitBreakerPermit, at now: Duration, rule: CircuitBreakerSlowCallRule?)
        -> Bool
    {
        guard let rule, let start = permit.start else { return false }
        return now - start > rule.threshold
    }

    /// When the call admitted with `permit` started, on the machine's time line; `nil` when
    /// the permit kept no start.
    ///
    /// A start read under the current re-base count takes the current offset; one read under
    /// an earlier count, the offset then, and no later than where the re-base from that count
    /// mapped its reading (a start read after the jump, before the re-base, counts as the
    /// latest time then, as any reading behind it does). A call spanning up to
    /// ``rememberedRebases`` re-bases is so timed on one line, where each jump counts as no
    /// time. One spanning more is timed from the earliest re-base the machine remembers: no
    /// longer than it ran on the line, so it may be judged fast when it was slow.
    package func start(of permit: CircuitBreakerPermit) -> Duration? {
        guard let start = permit.start else { return nil }
        if permit.rebases == self.rebases { return Self.adding(start, self.offset) }
        let age = self.rebases &- permit.rebases
        if age <= Self.rememberedRebases {
            let rebase = self.rebaseHistory[Int(permit.rebases % Self.rememberedRebases)]
            return Swift.min(Self.adding(start, rebase.offsetBefore), rebase.at)
        }
        let earliest = self.rebases &- Self.rememberedRebases
        return self.rebaseHistory[Int(earliest % Self.rememberedRebases)].at
    }

    /// The reading of the clock that stands for the latest time seen: ``latest`` less ``offset``.
    package var latestReading: Duration {
        Self.adding(self.latest, .zero - self.offset)
    }

    /// `time` less ``offset``: where a mark on the machine's time line falls among the clock's readings.
    package func reading(at time: Duration) -> Duration {
        Self.adding(time, .zero - self.offset)
    }

    /// Whether `reading` is behind the latest time seen: a caller that read the clock late,
    /// or a clock that went back.
    package func isBehind(_ reading: Duration) -> Bool {
        Self.adding(reading, self.offset) < self.latest
    }

    /// Adds the jump to ``offset`` when `reading` is behind `observed`: the clock went back,
    /// and the jump counts as no time elapsed.
    ///
    /// - Precondition: `reading` was read after the machine's latest time was `observed`,
    ///   and no other re-base came in between (the storage checks ``rebases``), so a reading
    ///   behind it is a clock that went back, never a late one. `reading` then maps to
    ///   `observed`, no later than the latest time, and later readings run on from there: the
    ///   machine's time stays no later than the time really elapsed, and an open breaker
    ///   stays open for what was left of its open time when the jump was seen, counted from
    ///   that reading.
    /// - Returns: Whether the offset moved.
    package mutating func rebase(from observed: Duration, to reading: Duration) -> Bool {
        let shifted = Self.adding(reading, self.offset)
        guard shifted < observed else { return false }
        let rebase = (offsetBefore: self.offset, at: observed)
        if self.rebaseHistory.count < Int(Self.rememberedRebases) {
            self.rebaseHistory.append(rebase)
        } else {
            self.rebaseHistory[Int(self.rebases % Self.rememberedRebases)] = rebase
        }
        self.offset = Self.adding(self.offset, observed - shifted)
        self.rebases &+= 1
        return true
    }

    /// `a + b`, held within `Duration`'s range rather than trapping (a clock may read
    /// centuries; an offset may add as much again).
    package static func adding(_ a: Duration, _ b: Duration) -> Duration {
        let (sum, overflow) = a.attoseconds.addingReportingOverflow(b.attoseconds)
        guard overflow else { return Duration(attoseconds: sum) }
        return Duration(attoseconds: b.attoseconds > 0 ? .max : .min)
    }

    /// A snapshot as of `now` (a reading); call ``advance(to:)`` first for due transitions.
    package func snapshot(name: String, at now: Duration) -> CircuitBreakerSnapshot {
        let now = Swift.max(Self.adding(now, self.offset), self.latest)
        let totals = self.window?.totals(at: now) ?? (calls: 0, failures: 0)
        var remaining: Duration?
        if case .open(let until) = self.phase { remaining = Swift.max(.zero, until - now) }
        return CircuitBreakerSnapshot(
            name: name,
            state: self.state,
            generation: self.generation,
            consecutiveFailures: self.consecutiveFailures,
            recentCalls: totals.calls,
            recentFailures: totals.failures,
            failureRate: totals.calls > 0 ? Double(totals.failures) / Double(totals.calls) : nil,
            probesInFlight: self.probes.count,
            successfulProbes: self.successfulProbes,
            consecutiveTrips: self.consecutiveTrips,
            openedAt: self.openedAt,
            remainingOpenTime: remaining,
            takenAt: now)
    }

    // MARK: - Calls

    /// Performs the transitions that are due by `now`: an open breaker whose
    /// time has passed turns half-open, and expired probe leases free their slots.
    package mutating func advance(to now: Duration) -> Transition? {
        let now = self.observe(now)
        switch self.phase {
        case .open(let until) where now >= until:
            let transition = self.enter(.halfOpen, reason: .openDurationElapsed, at: now)
            return transition
        case .halfOpen:
            self.probes.removeAll { $0.leaseExpiry <= now }
            return nil
        default:
            return nil
        }
    }

    /// Decides whether a call arriving at `now` may run, taking a probe slot if half-open.
    package mutating func admit(at now: Duration) -> (Admission, Transition?) {
        let transition = self.advance(to: now)
        let now = self.latest
        // A permit's start is a reading of the clock, as the lock-free admission takes it.
        let slowStart = self.configuration.slowCallRule == nil ? nil : self.latestReading
        switch self.phase {
        case .closed:
            let permit = CircuitBreakerPermit(
                generation: self.generation, ticket: 0, start: slowStart, rebases: self.rebases)
            return (.permitted(permit), transition)
        case .open(let until):
            return (.rejected(state: .open, retryAfter: until - now), transition)
        case .isolated:
            return (.rejected(state: .isolated, retryAfter: nil), transition)
        case .halfOpen:
            guard self.probes.count < self.configuration.maximumProbes else {
                // A slot frees when a probe finishes or, at the latest, when its lease runs out:
                // the earliest lease expiry bounds the wait, so a retry policy need not spin.
                let earliestExpiry = self.probes.lazy.map(\.leaseExpiry).min() ?? now
                return (.rejected(state: .halfOpen, retryAfter: Swift.max(.zero, earliestExpiry - now)), transition)
            }
            let ticket = self.nextTicket
            self.nextTicket &+= 1
            if self.nextTicket == 0 { self.nextTicket = 1 }
            self.probes.append(Probe(ticket: ticket, leaseExpiry: now + self.configuration.probeLease))
            let permit = CircuitBreakerPermit(
                generation: self.generation, ticket: ticket, start: self.latestReading, rebases: self.rebases)
            return (.permitted(permit), transition)
        }
    }

    /// Records the result of a call admitted with `permit`, finished at `now`.
    ///
    /// - Parameter now: The time the call finished, or `nil` when the caller did not
    ///   read the clock because the result cannot need it (a closed-state success under a
    ///   rule without a time window or slow-call rule, or a result that does not count);
    ///   the latest time seen stands in.
    /// - Returns: The transition the result caused, if any.
    package mutating func record(_ result: CallResult, for permit: CircuitBreakerPermit, at now: Duration?)
        -> Transition?
    {
        let now = now.map { self.observe($0) } ?? self.latest
        guard permit.generation == self.generation else {
            // A result from an earlier state does not count, but a server's hint describes
            // the server now, whichever generation admitted the call that heard it.
            guard case .failure(let pushback?) = result else { return nil }
            return self.applyLatePushback(pushback, at: now)
        }
        var result = result
        // Timed on the machine's line: a call that spans a re-base is measured on one line.
        if result == .success, let rule = self.configuration.slowCallRule, let start = self.start(of: permit),
            now - start > rule.threshold
        {
            result = .failure(pushback: nil)
        }
        switch self.phase {
        case .closed:
            return self.recordClosed(result, at: now)
        case .halfOpen:
            // A probe that outlived its lease no longer counts, whether or not a call has
            // come in since to find the lease expired and give the slot away.
            self.probes.removeAll { $0.leaseExpiry <= now }
            guard let index = self.probes.firstIndex(where: { $0.ticket == permit.ticket }) else {
                return nil  // the probe's lease expired and its slot went to another caller
            }
            self.probes.remove(at: index)
            switch result {
            case .ignored:
                return nil
            case .success:
                self.successfulProbes += 1
                guard self.successfulProbes >= self.configuration.successesToClose else { return nil }
                self.consecutiveTrips = 0
                return self.enter(.closed, reason: .probesSucceeded, at: now)
            case .failure(let pushback):
                return self.open(at: now, reason: .probeFailed, tripped: true, pushback: pushback)
            }
        case .open, .isolated:
            return nil  // unreachable: every permit from these states was refused
        }
    }

    private mutating func recordClosed(_ result: CallResult, at now: Duration) -> Transition? {
        switch result {
        case .ignored:
            return nil
        case .success:
            self.consecutiveFailures = 0
            guard self.window != nil else { return nil }
            self.window?.record(failure: false, at: now)
            // A failure-rate rule is judged on every call it counts: the success that brings
            // the window up to `minimumCalls` trips the breaker if the rate already meets the
            // threshold, as in resilience4j, rather than leaving it closed until the next failure.
            if self.tripRuleIsMet(at: now) {
                return self.open(at: now, reason: .tripped, tripped: true, pushback: nil)
            }
            return nil
        case .failure(let pushback):
            self.consecutiveFailures += 1
            self.window?.record(failure: true, at: now)
            if self.tripRuleIsMet(at: now) {
                return self.open(at: now, reason: .tripped, tripped: true, pushback: pushback)
            }
            if pushback != nil {
                return self.open(at: now, reason: .pushback, tripped: false, pushback: pushback)
            }
            return nil
        }
    }

    /// Opens the breaker, or keeps it open longer, for a hint that arrived with a
    /// result from an earlier generation.
    ///
    /// Keeping an open breaker open longer is reported as a transition from open to open, in a
    /// new generation (no call is admitted while open, so none is left behind), with the open
    /// time left from `now`: an observer ordering events by generation learns the later end.
    /// The breaker's ``openedAt`` and its trip count stay as they were: it opened once.
    private mutating func applyLatePushback(_ pushback: Duration, at now: Duration) -> Transition? {
        switch self.phase {
        case .closed, .halfOpen:
            return self.open(at: now, reason: .pushback, tripped: false, pushback: pushback)
        case .open(let until):
            let left = pushback.clampedToResilienceRange
            guard now + left > until else { return nil }
            var transition = self.enter(.open(until: now + left), reason: .pushback, at: now)
            transition.openDuration = left
            return transition
        case .isolated:
            return nil
        }
    }

    private func tripRuleIsMet(at now: Duration) -> Bool {
        switch self.configuration.tripRule.kind {
        case .consecutiveFailures(let count):
            return self.consecutiveFailures >= count
        case .failureRate(let threshold, let minimumCalls, _):
            guard let totals = self.window?.totals(at: now), totals.calls >= minimumCalls else { return false }
            return Double(totals.failures) / Double(totals.calls) >= threshold
        }
    }

    // MARK: - Manual controls

    /// Holds the breaker open until ``reset(at:)``; nothing if already isolated.
    package mutating func isolate(at now: Duration) -> Transition? {
        let now = self.observe(now)
        guard self.phase != .isolated else { return nil }
        let transition = self.enter(.isolated, reason: .isolated, at: now)
        self.openedAt = now
        return transition
    }

    /// Closes the breaker and forgets every count, trip and call in flight.
    ///
    /// Always starts a new generation, so results of calls admitted before the
    /// reset are ignored; reports a transition only if the state changed.
    package mutating func reset(at now: Duration) -> Transition? {
        let now = self.observe(now)
        let wasClosed = self.phase == .closed
        self.consecutiveTrips = 0
        let transition = self.enter(.closed, reason: .reset, at: now)
        return wasClosed ? nil : transition
    }

    // MARK: - Transitions

    private mutating func open(
        at now: Duration,
        reason: CircuitBreakerTransitionReason,
        tripped: Bool,
        pushback: Duration?
    ) -> Transition {
        // Only a trip lengthens a growing open duration; a server's hint alone does not.
        if tripped {
            self.consecutiveTrips = self.consecutiveTrips == .max ? .max : self.consecutiveTrips + 1
        }
        var duration = tripped ? self.configuration.openDuration.drawDuration(forTrip: self.consecutiveTrips) : .zero
        if let pushback { duration = Swift.max(duration, pushback) }
        duration = duration.clampedToResilienceRange
        var transition = self.enter(.open(until: now + duration), reason: reason, at: now)
        transition.openDuration = duration
        self.openedAt = now
        return transition
    }

    /// Moves to `phase` in a new generation, clearing what the old state counted.
    private mutating func enter(
        _ phase: Phase,
        reason: CircuitBreakerTransitionReason,
        at now: Duration
    ) -> Transition {
        let from = self.state
        self.phase = phase
        self.generation = (self.generations?.next() ?? self.generation &+ 1) & Self.generationMask
        self.consecutiveFailures = 0
        self.successfulProbes = 0
        self.probes.removeAll(keepingCapacity: true)
        self.window?.removeAll()
        if phase == .closed { self.openedAt = nil }
        return Transition(
            from: from, to: self.state, reason: reason, generation: self.generation, at: now, openDuration: nil)
    }

    /// Records `reading` (plus ``offset``) as the latest time if it is later; returns the latest time.
    private mutating func observe(_ reading: Duration) -> Duration {
        let now = Self.adding(reading, self.offset)
        if now > self.latest { self.latest = now }
        return self.latest
    }
}
