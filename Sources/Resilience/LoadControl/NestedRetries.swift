public import Synchronization

/// Whether a ``RetryPolicy`` retries a failure that a policy nested inside its
/// operation already retried to exhaustion.
///
/// Retries multiply across layers: an SDK that makes 3 attempts inside an app
/// that makes 3 attempts inside a job that makes 3 sends 27 requests to a server
/// that is down. Google's *Site Reliability Engineering* book ("Handling
/// Overload") asks that only the layer right above the failing one retry. By
/// default (``innermostLayer``) a policy whose operation failed because an inner
/// policy ran out of attempts stops at once with
/// ``RetryStopReason/retriedByInnerPolicy``, and tells the layer above it the
/// same, so three nested policies of 3 attempts send 3 requests, not 27.
///
/// ```swift
/// let sdkPolicy = try RetryPolicy(maximumAttempts: 3)
/// let appPolicy = try RetryPolicy(maximumAttempts: 3)  // .innermostLayer
/// try await appPolicy.execute { try await sdkPolicy.execute { try await server.call() } }  // at most 3 calls
/// let stubborn = try RetryPolicy(maximumAttempts: 3, nestedRetries: .everyLayer)
/// ```
///
/// A policy that stopped with ``RetryStopReason/notIdempotent`` (the request may
/// have reached the server and may not run twice) tells the layers above the
/// same, and they stop with that reason too, whatever this setting or their own
/// idempotency says: the inner policy knows the request. A call declared not
/// idempotent through ``Hedging/execute(idempotency:operation:)``,
/// ``Timeout/execute(idempotency:operation:)`` or
/// ``ResiliencePipeline/execute(idempotency:operation:)`` tells them the same when
/// it fails in a way that does not prove its request never left. Such a call that
/// succeeds stops them too when the attempt holding it fails afterwards, where their
/// attempt runs in a scope that hears of it (see <doc:TheRulesNoClassifierCanChange>,
/// "Which calls may be repeated"). A policy that stopped for any other reason (its
/// classifier said final, its budget or deadline ran out) leaves the layer above
/// free to judge the failure itself.
///
/// ## What is detected, exactly
///
/// The fact travels with the error value, addressed to the call it is for. A policy
/// that retried a failure to exhaustion ends its call with the operation's error
/// unchanged (a ``CircuitBreakerOpenError`` excepted: one thread throws one box for
/// equal rejections, so the policy ends with an equal error in a box of its own), and
/// that error is the same value, the same heap box, all the way up: through a rethrow,
/// a `catch` that throws `error` again, a `Result`, a child task, a task group, an
/// `async let` or the task in which a ``Timeout`` or
/// ``RetryPolicy/execute(attemptTimeout:idempotency:operation:)`` runs an attempt.
/// The policy remembers that value, without keeping it alive, together with the
/// call it was nested in; that call, when its attempt fails with that very value,
/// stops. So:
///
/// - Detected: the inner policy's error reaching the outer one as thrown, however
///   many layers deep, while anything still holds it, when the inner policy ran
///   inside the outer call: in the outer call's own task; in the tasks the library
///   starts for an attempt (an attempt timeout, a ``Timeout``, a ``Hedging`` call) and
///   in tasks started within those; and, when the outer call hands something down to
///   the calls nested in it (a ``RetryPolicy/deadline``, a declared ``Idempotency``,
///   a classifier that declares its calls not idempotent), in any task that inherits
///   its task-local values.
/// - Not detected, by design: an error the code between the layers replaces,
///   wraps or rebuilds (`throw SDKError.network(underlying: error)`, `catch let e
///   as MyError { throw e }` on a concrete type, which boxes it anew). That is a
///   new failure, and the outer policy judges it with its classifier as usual.
///   Rethrow the error you caught, or throw it as `any Error`, to keep the fact.
/// - Not detected either: a policy in a task the operation itself starts (`async let`,
///   a task group, `Task {}`) inside a plain outer call, one that hands nothing down.
///   Such a call installs nothing on its success path for that task to inherit (it
///   would cost every call more than the rest of the policy), so the outer policy judges
///   the failure itself. Declare the outer call's idempotency
///   (`execute(idempotency: .idempotent)`) to have it detected there. A detached task
///   inherits nothing and is part of no call.
/// - One instance, many layers: a policy nested in itself (one app-wide policy used by a
///   helper and by a caller that wraps a sequence of those helpers) is as many layers as
///   it has calls, and sends what as many instances send: three nested calls of one policy
///   of 3 attempts send 3, and a `POST` declared not idempotent inside is sent once.
/// - Never confused: two policies called one after the other, each failing with
///   an error that merely looks the same; unrelated calls that hold the very same
///   error value (several callers awaiting one in-flight request); a record whose
///   error is gone (its memory reused by a new error); many tasks failing at once.
///   A record is taken only by the call it is addressed to, once: a layer further
///   out sees it only when that call passes it on. Calls sharing one error value each
///   keep their own record, so a later one never overwrites an earlier one's word. No
///   record is dropped while its error lives, unless more than about 1,000 calls at once
///   are owed a word about that one value (64 words are kept in full, and 1,024 more that
///   the policies stopped on as exhausted in brief): the oldest of those then gives way (its
///   call retries, as with ``everyLayer``). A "not idempotent" word never does: with 64 of
///   those kept, a further one finds no room, and every call holding that value that finds
///   no word of its own then stops as if told "not idempotent". That errs towards sending
///   less; a `POST` declared not idempotent is never sent twice, however many callers share
///   the value.
/// - Shared error values: some libraries throw one stored value again and again
///   (a `static let` error). A record is taken only if it was written after the
///   taker's attempt began, so a stored error that some policy exhausted earlier
///   never stops a later call. Errs towards sending less in one case: a policy
///   nested in this attempt exhausting the same stored value, or stopping on it
///   because its request was not idempotent, in a call whose failure the attempt
///   swallowed; the policy then stops after one attempt, as for a nested one. The
///   word an outer policy passed on with nothing around it to read it lies where the
///   next call of the same pair leaves its own: that next call reads only what was
///   written after its attempt began, so the same pair called again and again with one
///   stored value sends what its inner policy sends each time, and an earlier call's
///   "not idempotent" does not speak for a later one.
public struct NestedRetries: Sendable, Hashable, CustomStringConvertible {
    /// Whether this layer retries what a layer below already retried to exhaustion.
    public let retriesExhaustedFailures: Bool

    private init(retriesExhaustedFailures: Bool) {
        self.retriesExhaustedFailures = retriesExhaustedFailures
    }

    /// Only the innermost policy retries a given failure; the default.
    public static let innermostLayer = NestedRetries(retriesExhaustedFailures: false)
    /// This policy retries failures whatever the policies inside it did: the opt-out.
    public static let everyLayer = NestedRetries(retriesExhaustedFailures: true)

    /// `innermostLayer` or `everyLayer`.
    public var description: String { self.retriesExhaustedFailures ? "everyLayer" : "innermostLayer" }
}

/// Where a policy that ran out of attempts leaves word for the policy around it.
///
/// A plain call may not install a task-local on its success path (it would cost
/// more than the call), so an outer policy has nothing in place when its first
/// attempt runs. Instead the word is keyed by the identity of the error value: an
/// `any Error` is one reference to a heap box, and a rethrow, a `Result`, a child
/// task or a task group hands on the same box. A policy that exhausts its attempts
/// records the box here, holding it weakly, addressed to the call it is nested in
/// (``Address``); that call, on its failure path, finds the box it caught and stops,
/// if the record is addressed to it and was written after its attempt began (`mark`,
/// one relaxed load per attempt, is all the success path pays). The address is worked
/// out on the failure paths: the writer's when it stops, the taker's when it fails.
/// Unrelated calls may hold the very same box (callers awaiting one shared task), so
/// the box alone does not say whose word it is.
///
/// A record lives exactly as long as its error: it is found only while the weak
/// reference still answers with the very box (so a new error allocated where a
/// dead one was never matches), and records whose errors are gone are swept out
/// as new ones are written. No error's records are dropped for lack of room, so many
/// tasks failing at once cannot push out a record in transit. One box keeps a record for
/// each call it is addressed to (``Entry``), up to ``Entry/capacity``, and past that the
/// "exhausted" words in brief (``SpilledWords``), up to a bound of their own: a stored error
/// thrown again and again to calls with nothing around them to take the word would
/// otherwise keep one record a call for as long as it lives.
@usableFromInline
enum NestedRetryLedger {
    /// Counts the records written, so that a record can be told from one written before an attempt began.
    @usableFromInline static let written = Atomic<UInt64>(0)

    /// The count of records written so far: read when an attempt starts, one relaxed load.
    @inlinable static var mark: UInt64 { Self.written.load(ordering: .relaxed) }

    struct Record {
        /// The error box; `nil` once the error is gone.
        weak var error: AnyObject?
        /// When it was last written, in ``written``'s count: a record is an inner policy's word
        /// about an attempt only if it was written after the attempt began.
        var sequence: UInt64
        /// When a writer last said "not idempotent", in ``written``'s count, or 0 for never: the
        /// word counts for an attempt only if it was said after the attempt began. A record may
        /// join word about an earlier call at the same address (``absorb(_:)``); a "not
        /// idempotent" said for that call is dated before the attempt, and does not speak for it.
        /// The record names no writer: a policy nested in itself takes its own word like any
        /// other layer's (see ``Entry/take(by:writtenAfter:)``).
        var notIdempotentSince: UInt64
        /// When a writer last said "too many requests", in ``written``'s count, or 0 for never;
        /// dated as ``notIdempotentSince`` is.
        var tooManyRequestsSince: UInt64 = 0
        /// The call the word is for: the one the last writer was nested in.
        var address: Address
        /// Whether that call took the word; it is not taken twice, so a layer further out
        /// sees it only if the call passes it on (writing it again).
        var isTaken = false

        /// What the record says for an attempt that began at `mark`.
        func word(after mark: UInt64) -> Word {
            if self.notIdempotentSince > mark { return .notIdempotent }
            return self.tooManyRequestsSince > mark ? .tooManyRequests : .exhausted
        }

        /// Whether the record says more than "exhausted": a word no other word displaces.
        var isHardStop: Bool { self.notIdempotentSince != 0 || self.tooManyRequestsSince != 0 }

        /// Adds `new`, written later at the same address, to this record: once taken, the
        /// record is spent and `new` replaces it (the call passing the word on). Else the
        /// record takes `new`'s date, and a "not idempotent" said earlier is kept with its date.
        ///
        /// Nothing at write time tells a record left by a writer nested in the same attempt
        /// from one left for an earlier call at the same address (a plain outer call's own
        /// word, passed on with no call around it to take it, then the next call of the same
        /// pair in the same task): the taker, which knows when its attempt began, tells them
        /// apart by the dates (``Entry/take(by:writtenAfter:)``).
        mutating func absorb(_ new: Record) {
            guard !self.isTaken else {
                self = new
                return
            }
            self.sequence = new.sequence
            self.notIdempotentSince = Swift.max(self.notIdempotentSince, new.notIdempotentSince)
            self.tooManyRequestsSince = Swift.max(self.tooManyRequestsSince, new.tooManyRequestsSince)
        }
    }

    /// The records of one error box: one for each call they are addressed to.
    ///
    /// Unrelated calls can hold the very same box (callers awaiting one shared request), and
    /// each keeps its own word: one call's record never overwrites another's. Almost always
    /// there is one, held inline; the others are for the shared case.
    struct Entry {
        var first: Record
        /// The records for other calls holding the same box; empty, allocating nothing, unless shared.
        var others: [Record] = []
        /// When a "not idempotent" word last found no room (the box held ``capacity`` words, each
        /// "not idempotent", none taken), in ``written``'s count, or 0 for never. Such a word is
        /// never displaced: a call whose word is not kept would send its request again. A taker
        /// that finds no word of its own in the box takes this one instead
        /// (``take(by:writtenAfter:)``): it fails closed, and stops.
        var overflowNotIdempotentSince: UInt64 = 0
        /// The "exhausted" words the records gave way for, in brief; empty, allocating nothing, until
        /// the box holds ``capacity`` words.
        var spilled = SpilledWords()

        /// Words kept in full at most for one box. Past that, a new word displaces the oldest
        /// "exhausted" one not yet taken, which is kept in brief among the ``spilled`` words, never a
        /// "not idempotent" one; with none to displace, a new "exhausted" word goes there itself, and
        /// a "not idempotent" one is dropped and dated (``overflowNotIdempotentSince``): a stored
        /// error value thrown again and again to calls with no policy around them would otherwise
        /// keep one record a call while it lives.
        static let capacity = 64

        var count: Int { 1 + self.others.count }

        subscript(index: Int) -> Record {
            index == 0 ? self.first : self.others[index - 1]
        }

        /// Changes the record at `index` in place.
        mutating func update(_ index: Int, _ change: (inout Record) -> Void) {
            if index == 0 { change(&self.first) } else { change(&self.others[index - 1]) }
        }

        /// Keeps `new`: joined to the record for the same call; else in the place of a record
        /// already taken; else beside the others, within ``capacity``.
        mutating func write(_ new: Record) {
            var taken: Int?
            for index in 0..<self.count {
                if self[index].address == new.address {
                    self.update(index) { $0.absorb(new) }
                    return
                }
                if taken == nil, self[index].isTaken { taken = index }
            }
            if let taken {
                self.update(taken) { $0 = new }
            } else if self.count < Self.capacity {
                self.others.append(new)
            } else if let exhausted = self.oldestExhausted() {
                self.spilled.keep(self[exhausted])
                self.update(exhausted) { $0 = new }
            } else if new.isHardStop {
                // Every kept word is a hard stop: this one is dropped, and dated; a taker that
                // finds none of its own stops as if told "not idempotent" (it fails closed).
                self.overflowNotIdempotentSince = Swift.max(
                    self.overflowNotIdempotentSince, new.notIdempotentSince, new.tooManyRequestsSince)
            } else {
                // Every kept word is a hard stop: this "exhausted" one is kept in brief.
                self.spilled.keep(new)
            }
        }

        /// The oldest record that only says "exhausted", or `nil` for none: the one a new word
        /// displaces when the box holds ``capacity``.
        private func oldestExhausted() -> Int? {
            var oldest: Int?
            for index in 0..<self.count where !self[index].isHardStop {
                if oldest.map({ self[index].sequence < self[$0].sequence }) ?? true { oldest = index }
            }
            return oldest
        }

        /// Takes every record for `taker` written after `mark`: its word ("not idempotent" if any
        /// says so since `mark`), or `nil` for none. A taker that finds none of its own in a box
        /// that dropped a "not idempotent" word since `mark` (``overflowNotIdempotentSince``) may be
        /// the call that word was for: it is told "not idempotent".
        ///
        /// Whichever policy instance wrote it: one instance nested in itself (an app-wide policy
        /// used by a helper and by a caller around the helper) is as many layers as calls. The
        /// writer is told apart by its call, not its instance, and needs no name for it: a call
        /// writes only as it ends, after its last take, so no call reads its own word; a record an
        /// earlier call of the same instance left is dated before `mark`.
        mutating func take(by taker: Taker, writtenAfter mark: UInt64) -> Word? {
            var found: Word?
            for index in 0..<self.count {
                let record = self[index]
                // Written before the taker's attempt began: word about an earlier call, not this one.
                guard record.sequence > mark, !record.isTaken, taker.isAddressed(by: record.address) else { continue }
                self.update(index) { $0.isTaken = true }
                // Two writers nested in this call, in tasks of their own, may have stopped on one
                // box: "not idempotent" from either stands.
                if found != .notIdempotent, found != .tooManyRequests || record.word(after: mark) == .notIdempotent {
                    found = record.word(after: mark)
                }
            }
            if found == nil, self.overflowNotIdempotentSince > mark { return .notIdempotent }
            if found == nil, self.spilled.take(by: taker, writtenAfter: mark) { return .exhausted }
            return found
        }
    }

    /// The "exhausted" words one box's records gave way for (``Entry/write(_:)``), each kept in
    /// brief: the call it is for, one of its tasks (a word for several tasks is kept once for each)
    /// and its date. A word said "not idempotent" is never among them.
    ///
    /// Many unrelated calls may hold one error value at once (callers awaiting one failed request),
    /// each with a word of its own to take; a word dropped for lack of room would have its outer
    /// policy retry, and multiply the attempts its inner policy made. Nothing tells those calls from
    /// plain calls with no policy nested in them that throw one stored error value, whose words no
    /// call ever takes: stopping a call that finds no word of its own after a word was dropped
    /// would stop those plain calls after their first attempt. So words are kept, in brief, up to
    /// ``capacity``, the oldest then giving way: a call past that many retries, as with
    /// ``NestedRetries/everyLayer``. They go with the box's records when its error is gone.
    struct SpilledWords {
        struct Word {
            var call: UInt64
            var task: Int
            /// When it was written, in ``written``'s count; 0 once taken.
            var sequence: UInt64
        }

        /// The words; up to ``capacity``, then each new one in the place of the oldest (``next``).
        var words: [Word] = []
        var next = 0
        /// The date of the latest word kept, or 0 for none: a taker whose attempt began after it looks no further.
        var latest: UInt64 = 0

        /// Words kept in brief at most for one box: about 24 KB.
        static let capacity = 1_024

        /// Keeps `record`'s word, in brief.
        mutating func keep(_ record: Record) {
            for task in record.address.tasks {
                let word = Word(call: record.address.call, task: task, sequence: record.sequence)
                if self.words.count < Self.capacity {
                    self.words.append(word)
                } else {
                    self.words[self.next] = word
                    self.next = (self.next + 1) % Self.capacity
                }
            }
            self.latest = Swift.max(self.latest, record.sequence)
        }

        /// Takes every word for `taker` written after `mark`; whether there was one.
        mutating func take(by taker: Taker, writtenAfter mark: UInt64) -> Bool {
            guard self.latest > mark else { return false }
            var found = false
            for index in self.words.indices {
                let word = self.words[index]
                guard word.sequence > mark, word.call == taker.call, taker.ownsCall || word.task == taker.task else {
                    continue
                }
                self.words[index].sequence = 0
                found = true
            }
            return found
        }
    }

    /// Where in the call tree the policy that wrote a record sat: the call its word is for.
    ///
    /// The word is for the nearest enclosing call of a ``RetryPolicy``. A call that hands a
    /// scope down (a deadline, a declared idempotency) puts its number there
    /// (`CallScope.retryCall`), and every policy nested in it, in any task that inherits the
    /// scope, names that number. A plain call installs nothing, so that its success path reads
    /// no task-local; a policy nested in it names the same enclosing number it sees, and
    /// the tasks it runs in: its own, and each task from which one of the library's
    /// time limits or hedged calls enclosing it started the attempt's task
    /// (`TimeLimitSignal.host`). The plain call takes the word only if it runs in one of
    /// those tasks: everything its task runs during its attempt is nested in it.
    struct Address: Equatable {
        /// The number of the nearest enclosing call that handed a scope down, or 0 for none.
        var call: UInt64
        /// The writer's own task and the tasks the library started its enclosing attempts from.
        var tasks: [Int]

        /// The address of a policy stopping now, nested in the call numbered `call`.
        static func here(in call: UInt64) -> Address {
            let scope = CallScope.current
            var tasks = [NestedRetryLedger.currentTask]
            for chain in [scope.timeLimits, scope.supersessions] {
                var signal = chain
                while let current = signal {
                    if !tasks.contains(current.host) { tasks.append(current.host) }
                    signal = current.enclosing
                }
            }
            return Address(call: call, tasks: tasks)
        }
    }

    /// A call about to take a record: the number it sees in its scope, its task, and whether
    /// the number is its own (a call that hands a scope down) rather than an enclosing call's.
    struct Taker {
        var call: UInt64
        var task: Int
        var ownsCall: Bool

        /// Whether a record at `address` is word for this call.
        func isAddressed(by address: Address) -> Bool {
            address.call == self.call && (self.ownsCall || address.tasks.contains(self.task))
        }
    }

    /// What a policy that stopped leaves word of.
    enum Word {
        /// It retried the failure to exhaustion: the layers above need not retry it again.
        case exhausted
        /// The request may have reached the server and is not idempotent: no layer above
        /// may send it again, whatever it was told about its own operation.
        case notIdempotent
        /// A ``Fallback``'s answer failed after handling a failure that got an HTTP 429: the answer's
        /// error stands for that call, and no layer above may send it again
        /// (``RetryStopReason/tooManyRequests``).
        case tooManyRequests
    }

    struct Records {
        var byError: [ObjectIdentifier: Entry] = [:]
        /// Sweep out dead records once this many are kept, counting the entries replaced since the
        /// last sweep (``replacedSinceSweep``); doubles with the live ones.
        var sweepThreshold = Self.minimumSweepThreshold
        /// Entries replaced by (or removed for) a new box at a dead one's address since the last sweep.
        var replacedSinceSweep = 0
        static let minimumSweepThreshold = 64
        /// Runs under the lock for each error box a sweep finds alive, as the sweep holds it; for
        /// tests, which let the error go there as another thread may (see ``sweep(_:)``).
        var sweepProbe: (@Sendable (AnyObject) -> Void)?
    }

    /// Sweeps out the records whose errors are gone; under the lock. Returns the boxes it found
    /// alive, for the caller to let go once the lock is released.
    ///
    /// Telling a record alive loads its weak reference: a strong reference to the box, for that
    /// moment. Should the app let go of the error meanwhile, on another thread, releasing that
    /// reference would be the last release, and run the box's `deinit` (the app's error's, an app
    /// class's) under the lock. So each box loaded is kept until the lock is released.
    private static func sweep(_ records: inout Records) -> [AnyObject] {
        var alive: [AnyObject] = []
        alive.reserveCapacity(records.byError.count)
        let probe = records.sweepProbe
        records.byError = records.byError.filter { entry in
            guard let box = entry.value.first.error else { return false }
            alive.append(box)
            probe?(box)
            return true
        }
        records.sweepThreshold = Swift.max(Records.minimumSweepThreshold, records.byError.count * 2)
        records.replacedSinceSweep = 0
        return alive
    }

    /// Has `probe` run under the lock for each error box the sweeps find alive, and the next
    /// record written sweep the ledger; `nil` to stop. For tests.
    static func probeSweeps(with probe: (@Sendable (AnyObject) -> Void)?) {
        let replaced = self.records.withLock { records in
            defer {
                records.sweepProbe = probe
                if probe != nil { records.sweepThreshold = 0 }
            }
            return records.sweepProbe
        }
        // The probe replaced, and what it holds, let go outside the lock.
        _ = replaced
    }

    /// Whether the ledger's lock is held now, by any thread; for tests.
    static var isLockHeld: Bool { self.records.isHeld }

    private static let records = Lock(Records())

    /// Counts the calls that hand a scope down, for their numbers (`CallScope.retryCall`).
    private static let calls = Atomic<UInt64>(0)

    /// A new number for a call that hands a scope down; never 0.
    static func newCall() -> UInt64 {
        self.calls.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// When a call that may not run twice last succeeded inside each call that hears of it
    /// (`CallScope.succeededCall`), in ``written``'s count, by the call's number.
    ///
    /// The request of such a call reached the dependency: an attempt that holds it and fails
    /// afterwards, on the app's own check of the answer for instance, must not run again, or the
    /// request is sent twice. The succeeding call notes the moment under the number of the nearest
    /// call around it that hears of it (``noteSuccess(at:in:)``); a policy, on its failure path,
    /// compares the moment under the number it sees with the count when its attempt began
    /// (``latestSuccess(in:)``). Each call that hears of successes removes its own entry when it
    /// ends, whatever the outcome, and passes the moment on to the call around it
    /// (``endSuccesses(of:passingTo:)``), which learns of it in turn; so an entry lives no
    /// longer than its call, and nothing is dropped for lack of room.
    ///
    /// A table rather than an object per call: the success path of a call that hands a scope down
    /// allocates nothing for it, and pays one store (``ended``) and one load of ``successCount`` as it ends. A plain
    /// policy call binds no scope, so a success reaches only the policies that have one, or that
    /// run inside one (the rules article's "Which calls may be repeated" says what that leaves out).
    /// A task that outlives the call whose scope it inherited (an unstructured `Task`) and notes
    /// a success after that call ended leaves none: the success is dropped (``ended``).
    private static let successes = Lock([UInt64: UInt64]())
    /// How many entries ``successes`` holds; changed under its lock, read alone by a call that
    /// ends, so that it takes the lock only when some call noted a success.
    private static let successCount = Atomic<Int>(0)

    /// The numbers of the calls that ended last, each in the slot its number falls in
    /// (``endedSlots``): a success noted for a call that already ended (in a task the call's
    /// operation started, `Task {}`, that outlives it) is dropped, not kept under a number no
    /// call will end again. A slot holds only the number that ended last in it, so a success
    /// noted for a live call is never dropped; one noted after its call ended and
    /// ``endedSlots`` more calls with numbers in the same slot ended too is still kept.
    private static let ended: InlineArray<1024, Atomic<UInt64>> = .init { _ in Atomic(0) }
    private static let endedSlots: UInt64 = 1024

    /// Notes that a call that may not run twice succeeded at `moment`, in ``written``'s count,
    /// inside the call numbered `call`, unless that call already ended (``ended``).
    static func noteSuccess(at moment: UInt64, in call: UInt64) {
        self.successes.withLock { table in
            self.keep(moment, under: call, in: &table)
            // After counting the entry: a call ending meanwhile either sees the count and removes
            // the entry itself, or has marked its end where this load sees it.
            let slot = Int(call % Self.endedSlots)
            if self.ended[slot].load(ordering: .sequentiallyConsistent) == call, table.removeValue(forKey: call) != nil
            {
                self.successCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
            }
        }
    }

    /// Keeps `moment` under `call` in `table`, the later of it and the one kept there, counting
    /// a new entry (``successCount``). Under the lock.
    private static func keep(_ moment: UInt64, under call: UInt64, in table: inout [UInt64: UInt64]) {
        if let earlier = table[call] {
            table[call] = Swift.max(earlier, moment)
        } else {
            table[call] = moment
            self.successCount.wrappingAdd(1, ordering: .sequentiallyConsistent)
        }
    }

    /// The latest moment a call that may not run twice succeeded inside the call numbered `call`,
    /// as noted so far, or 0 for none. Failure path only.
    static func latestSuccess(in call: UInt64) -> UInt64 {
        guard self.successCount.load(ordering: .relaxed) != 0 else { return 0 }
        return self.successes.withLock { $0[call] ?? 0 }
    }

    /// Ends the entry of the call numbered `call`, which heard of successes inside it, as the call
    /// ends: removes it, and passes its moment on to the call around it, numbered `enclosing`
    /// (0 for none), so that a later failure of that call's attempt is not run again either.
    ///
    /// On every path the call ends by. One store (the call's end, ``ended``) and one load when no
    /// call noted a success.
    static func endSuccesses(of call: UInt64, passingTo enclosing: UInt64) {
        guard call != 0 else { return }
        self.ended[Int(call % Self.endedSlots)].store(call, ordering: .sequentiallyConsistent)
        guard self.successCount.load(ordering: .sequentiallyConsistent) != 0 else { return }
        self.successes.withLock { table in
            guard let moment = table.removeValue(forKey: call) else { return }
            self.successCount.wrappingSubtract(1, ordering: .sequentiallyConsistent)
            // Not to a call that already ended (a task it started that outlived it): kept there for ever.
            if enclosing != 0,
                self.ended[Int(enclosing % Self.endedSlots)].load(ordering: .sequentiallyConsistent) != enclosing
            {
                self.keep(moment, under: enclosing, in: &table)
            }
        }
    }

    /// How many calls' successes are kept now; for tests.
    static var successEntries: Int {
        self.successes.withLock { $0.count }
    }

    /// A key for the current task, 0 outside any: the same for one task, different for two
    /// tasks alive at the same time.
    ///
    /// It is the task's address, the one word an `UnsafeCurrentTask` holds: every library time
    /// limit and hedged attempt reads it on its success path (`TimeLimitSignal.host`), where the
    /// hash its `Hashable` conformance computes cost about 12 ns more a call. Should the type
    /// ever hold more than a word, the key is that hash, which two live tasks share only by a
    /// 64-bit collision.
    static var currentTask: Int {
        withUnsafeCurrentTask { task in
            guard let task else { return 0 }
            guard MemoryLayout<UnsafeCurrentTask>.size == MemoryLayout<Int>.size else { return task.hashValue }
            return unsafeBitCast(task, to: Int.self)
        }
    }

    /// Records that a policy stopped on `error` with `word` (or passed on an inner policy's word
    /// for it), or that a call declared not idempotent without a policy of its own failed with
    /// it (``recordFailure(_:ofCallDeclaring:)``), for the call at `address`.
    static func record(_ word: Word, for error: any Error, to address: Address) {
        let box = self.box(of: error)
        let key = ObjectIdentifier(box)
        let sequence = self.written.wrappingAdd(1, ordering: .relaxed).newValue
        let new = Record(
            error: box, sequence: sequence, notIdempotentSince: word == .notIdempotent ? sequence : 0,
            tooManyRequestsSince: word == .tooManyRequests ? sequence : 0, address: address)
        let swept = self.records.withLock { records -> [AnyObject] in
            // Another call's word for this very error is kept beside it (see ``Entry``). The weak
            // reference loaded here answers with `box` or nothing: no other box lives at its
            // address, and this call holds `box`, so no release here can be an error's last.
            if records.byError[key]?.first.error === box {
                records.byError[key]?.write(new)
                return []
            }
            // A box at a dead one's address replaces its records rather than adding: counted too,
            // or failures landing where a burst's errors were would never reach the threshold.
            if records.byError.updateValue(Entry(first: new), forKey: key) != nil { records.replacedSinceSweep += 1 }
            guard records.byError.count + records.replacedSinceSweep >= records.sweepThreshold else { return [] }
            return self.sweep(&records)
        }
        // The boxes the sweep loaded are let go here, with the lock released: one may be the last
        // reference to an error, whose `deinit` is the app's code.
        withExtendedLifetime(swept) {}
    }

    /// Leaves word for the policies around a call that declared `idempotency` itself and
    /// failed with `error`, as a policy that stops on a request that is not idempotent does.
    ///
    /// For ``Hedging``, a ``Timeout`` and a ``ResiliencePipeline`` called with a declaration:
    /// they hand it down to the policies inside, but a policy around them runs outside that
    /// declaration, and would otherwise judge the failure as idempotent and send the request
    /// again. The word is left when the rules stop a call declared so on this failure
    /// (``Rulebook/stopReason(for:idempotency:)`` says ``RetryStopReason/notIdempotent``:
    /// nothing proves the request never left); a declaration that allows a second run, or a
    /// failure that proves the request was never sent, leaves none.
    ///
    /// Failure path only: one analysis of `error`, and a record when the rules say so.
    static func recordFailure(_ error: any Error, ofCallDeclaring idempotency: Idempotency?) {
        guard let idempotency, !idempotency.isIdempotent, !Task.isCancelled,
            Rulebook.stopReason(for: FailureAnalysis(error), idempotency: idempotency) == .notIdempotent
        else { return }
        // Word for the call around this one: the scope here is the enclosing call's.
        self.record(.notIdempotent, for: error, to: .here(in: CallScope.current.retryCall))
    }

    /// Leaves word for the policies around a ``Fallback`` whose answer failed with `error` after
    /// handling a failure read as `handled`, when the rules stop that failure whatever a
    /// classifier says: an HTTP 429 (``RetryStopReason/tooManyRequests``), or a request that may
    /// not run twice, by the enclosing call's declaration or its own report, and that may have
    /// left (``RetryStopReason/notIdempotent``).
    ///
    /// The answer's error replaces the failure, so a policy around the fallback would judge a new
    /// failure and send the request again; the word travels with the answer's error instead, as a
    /// declared call's does (``recordFailure(_:ofCallDeclaring:)``). Nothing in a task the caller
    /// cancelled, which no policy retries. Failure path only.
    static func recordFailure(_ error: any Error, ofAnswerTo handled: FailureAnalysis) {
        guard !Task.isCancelled else { return }
        let word: Word
        switch Rulebook.stopReason(for: handled, idempotency: CallScope.current.idempotency ?? .idempotent) {
        case .tooManyRequests?: word = .tooManyRequests
        case .notIdempotent?: word = .notIdempotent
        default: return
        }
        self.record(word, for: error, to: .here(in: CallScope.current.retryCall))
    }

    /// Leaves word for the policies around a library time limit or a hedged call whose attempt,
    /// run under `signal`, failed with `error`, its own failure, after a call in it that may not
    /// run twice had succeeded (`CallScope.noteSucceeded()`): the attempt's request reached the
    /// dependency, so whatever `error` says, no policy around it may run the attempt again.
    ///
    /// A policy around the limit runs outside its scope, and a plain one binds none of its own
    /// where the mark could reach it: the word travels with the error, as a declared call's does
    /// (``recordFailure(_:ofCallDeclaring:)``). Nothing in a task the caller cancelled, which no
    /// policy retries. Failure path only: one load, and a record when the mark is there.
    static func recordFailure(_ error: any Error, ofAttemptUnder signal: TimeLimitSignal) {
        guard signal.notIdempotentCallSucceeded(after: 0), !Task.isCancelled else { return }
        self.record(.notIdempotent, for: error, to: .here(in: CallScope.current.retryCall))
    }

    /// Leaves word for the policies around a call that hears of successes under `call` (a
    /// declared ``ResiliencePipeline`` call, a declared ``Hedging`` call that runs once, see
    /// `CallScope.hearSucceededCalls()`) and failed with `error` after a call nested in it that
    /// may not run twice had succeeded: as ``recordFailure(_:ofAttemptUnder:)`` does for a limit.
    ///
    /// The call's own declaration does not stop them on every failure: the rules let a call that
    /// may not run twice be sent again after a failure that proves its request never left, which
    /// speaks for the call's last step alone, not for the request that succeeded before it.
    /// Failure path only, before the call ends its entry.
    static func recordFailure(_ error: any Error, ofCallHearing call: UInt64) {
        guard call != 0, self.latestSuccess(in: call) != 0, !Task.isCancelled else { return }
        self.record(.notIdempotent, for: error, to: .here(in: CallScope.current.retryCall))
    }

    /// The word of the record a policy nested in `taker` left for this very `error`, or `nil`
    /// for none; the record is then taken.
    ///
    /// A record written before `mark` is not taken, nor one addressed to another call (see
    /// ``Address``); a record the same policy instance wrote, nested in this call, is.
    static func take(_ error: any Error, by taker: Taker, writtenAfter mark: UInt64) -> Word? {
        let box = self.box(of: error)
        let key = ObjectIdentifier(box)
        return self.records.withLock { records in
            guard let entry = records.byError[key] else { return nil }
            guard entry.first.error === box else {
                // Its error is gone; this is a new one at the same address. Counted as replaced, as
                // in ``record(_:for:to:)``: the new one's record usually follows.
                records.byError[key] = nil
                records.replacedSinceSweep += 1
                return nil
            }
            return records.byError[key]?.take(by: taker, writtenAfter: mark) ?? nil
        }
    }

    /// How many error boxes have records now, live or not yet swept; for tests.
    static var count: Int {
        self.records.withLock { $0.byError.count }
    }

    /// How many records are kept now, and how many of those are of boxes still alive; for tests.
    static var counts: (kept: Int, live: Int) {
        let (kept, alive) = self.records.withLock { records in
            (records.byError.count, records.byError.values.compactMap { $0.first.error })
        }
        // Let go outside the lock, as a sweep's (see ``sweep(_:)``).
        return (kept, alive.count)
    }

    /// How many records `error` has now, one for each call they are addressed to; for tests.
    static func recordCount(for error: any Error) -> Int {
        let box = self.box(of: error)
        return self.records.withLock { records in
            guard let entry = records.byError[ObjectIdentifier(box)], entry.first.error === box else { return 0 }
            return entry.count
        }
    }

    /// How many words `error` keeps in brief now (``SpilledWords``), taken or not; for tests.
    static func spilledCount(for error: any Error) -> Int {
        let box = self.box(of: error)
        return self.records.withLock { records in
            guard let entry = records.byError[ObjectIdentifier(box)], entry.first.error === box else { return 0 }
            return entry.spilled.words.count
        }
    }

    /// Whether `one` and `other` are the same value in the same heap box.
    static func isSameBox(_ one: any Error, _ other: any Error) -> Bool {
        self.box(of: one) === self.box(of: other)
    }

    /// The heap box an `any Error` refers to: the value's identity, stable across rethrows.
    static func box(of error: any Error) -> AnyObject {
        // An existential `any Error` is a single strong reference to a box (on Apple
        // platforms an Objective-C object, an `NSError` itself for one), on every platform.
        // `as any Error` keeps the existential closed: opened, the cast would see the
        // concrete value, not the box.
        unsafeBitCast(error as any Error, to: AnyObject.self)
    }
}
