import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// The closed-state successes a time-window breaker counts without its lock: a counter word
/// every thread counts in, and once two threads are seen counting at once, a few more (stripes),
/// one per thread in turn, far enough apart not to share a cache line; with the span of the
/// bucket they are counted in.
///
/// One counter word shared by every thread is written by every success: with two cores
/// counting at once, the cache line holding it moves from one core to the other on nearly every
/// call, and 64 tasks on two threads got less done than one. A single counting thread pays
/// nothing for the stripes, though: it counts in the first stripe, as before, until a
/// compare-and-exchange there fails because another thread counted in between. From then on
/// (for the breaker's life) each thread counts in its own stripe, picked the first time it
/// looks (``stripeIndex()``), so two threads share one only when more threads than stripes
/// count at once. The bucket's span and the switch are written rarely, so in between the lines
/// a success reads stay in every core's cache.
///
/// Each stripe holds a word in the format ``CircuitBreakerStorage`` documents: bit 63 set
/// while a bucket is published, bits 32...62 the publication's tag, bits 0...31 the count.
/// The lock publishes a bucket by storing the same tagged word, count zero, into the first
/// stripe, and into every other one once threads count apart (``publish(start:end:tag:)``),
/// and takes the count back by exchanging each stripe it published for zero, before anything
/// reads the window: so a success counted against an older publication fails its exchange,
/// whichever stripe it used, and one that comes after the take, or that finds its stripe not
/// published, takes the lock. A stripe changes only while a bucket is published in it: with
/// none published, all hold zero.
final class CircuitBreakerSuccessStripes: Sendable {
    /// One counter word, 128 bytes or more after whatever comes before it: two words are never
    /// on one cache line, even where a line is 128 bytes or a core fetches lines in pairs.
    struct Stripe: ~Copyable, Sendable {
        private let padding = SIMD16<UInt64>()
        let word = Atomic<UInt64>(0)
    }

    /// What one attempt to count in a stripe came to.
    private enum Outcome {
        case counted
        /// No bucket published in the stripe, the success is outside its span, or the count is full.
        case needsLock
        /// Another thread counted in the stripe between the load and the exchange.
        case collided
    }

    /// How many stripes there are; a power of two.
    static let count = 4
    static let publishedBit: UInt64 = 1 << 63
    static let countMask: UInt64 = 0xFFFF_FFFF

    /// The published bucket's span in whole nanoseconds of elapsed time, start rounded up and
    /// end down; written only with a publication.
    private let bucketStart = Atomic<Int64>(0)
    private let bucketEnd = Atomic<Int64>(0)
    /// Whether threads count in stripes of their own: set, for good, by the first thread whose
    /// exchange on the first stripe failed because another thread had counted there.
    private let threadsCountApart = Atomic<Bool>(false)
    #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
        /// The thread-specific slot that holds each thread's stripe, read once from its global.
        private let threadKey: pthread_key_t? = stripeKey
    #endif
    private let stripe0 = Stripe()
    private let stripe1 = Stripe()
    private let stripe2 = Stripe()
    private let stripe3 = Stripe()

    init() {}

    /// Counts a success that finished at `now` (whole nanoseconds of elapsed time), if a bucket
    /// is published and `now` falls within its span; returns `false` when the caller must take
    /// the lock.
    ///
    /// Inlined up to the first stripe's exchange; the thread's own stripe is out of line.
    @inline(__always)
    func countSuccess(atNanoseconds now: Int64) -> Bool {
        if !self.threadsCountApart.load(ordering: .relaxed) {
            switch self.countSuccess(atNanoseconds: now, in: self.stripe0, stoppingOnCollision: true) {
            case .counted: return true
            case .needsLock: return false
            case .collided: self.threadsCountApart.store(true, ordering: .relaxed)
            }
        }
        return self.countSuccessInThreadStripe(atNanoseconds: now)
    }

    @inline(never)
    private func countSuccessInThreadStripe(atNanoseconds now: Int64) -> Bool {
        let outcome =
            switch self.stripeIndex() {
            case 0: self.countSuccess(atNanoseconds: now, in: self.stripe0, stoppingOnCollision: false)
            case 1: self.countSuccess(atNanoseconds: now, in: self.stripe1, stoppingOnCollision: false)
            case 2: self.countSuccess(atNanoseconds: now, in: self.stripe2, stoppingOnCollision: false)
            default: self.countSuccess(atNanoseconds: now, in: self.stripe3, stoppingOnCollision: false)
            }
        return outcome == .counted
    }

    /// One compare-and-exchange loop on `stripe`; a failed exchange against a new publication
    /// tries again, and one against another thread's count does too unless `stoppingOnCollision`.
    @inline(__always)
    private func countSuccess(
        atNanoseconds now: Int64, in stripe: borrowing Stripe, stoppingOnCollision: Bool
    ) -> Outcome {
        var pending = stripe.word.load(ordering: .acquiring)
        while true {
            guard pending & Self.publishedBit != 0, pending & Self.countMask != Self.countMask else {
                return .needsLock
            }
            let start = self.bucketStart.load(ordering: .acquiring)
            let end = self.bucketEnd.load(ordering: .acquiring)
            guard now >= start, now < end else { return .needsLock }
            let (exchanged, original) = stripe.word.compareExchange(
                expected: pending, desired: pending + 1, successOrdering: .acquiringAndReleasing,
                failureOrdering: .acquiring)
            if exchanged { return .counted }
            if stoppingOnCollision, original & ~Self.countMask == pending & ~Self.countMask { return .collided }
            pending = original
        }
    }

    /// Publishes a bucket's span under `tag` (at most 31 bits) for counting: the span first,
    /// then the tagged word in the first stripe, and in every other one once threads count
    /// apart. Called under the breaker's lock, after ``take(fromEveryStripe:)``.
    ///
    /// - Returns: Whether it published in every stripe, for the matching ``take(fromEveryStripe:)``.
    func publish(start: Int64, end: Int64, tag: UInt64) -> Bool {
        self.bucketStart.store(start, ordering: .releasing)
        self.bucketEnd.store(end, ordering: .releasing)
        let word = Self.publishedBit | tag << 32
        self.stripe0.word.store(word, ordering: .releasing)
        // Read under the lock; one that has just been set is seen at the next publication,
        // and until then its setter finds its own stripe not published and takes the lock.
        guard self.threadsCountApart.load(ordering: .relaxed) else { return false }
        self.stripe1.word.store(word, ordering: .releasing)
        self.stripe2.word.store(word, ordering: .releasing)
        self.stripe3.word.store(word, ordering: .releasing)
        return true
    }

    /// Stops the counting and returns the successes counted since the last publication: each
    /// stripe it published in (`everyStripe`, as ``publish(start:end:tag:)`` returned) is
    /// exchanged for zero. Called under the breaker's lock, and only while a bucket is published.
    func take(fromEveryStripe everyStripe: Bool) -> Int {
        let first = Self.taken(self.stripe0.word.exchange(0, ordering: .acquiringAndReleasing))
        guard everyStripe else { return first }
        return first + Self.taken(self.stripe1.word.exchange(0, ordering: .acquiringAndReleasing))
            + Self.taken(self.stripe2.word.exchange(0, ordering: .acquiringAndReleasing))
            + Self.taken(self.stripe3.word.exchange(0, ordering: .acquiringAndReleasing))
    }

    /// The successes counted since the last publication, not yet taken; for tests.
    var pendingCount: Int {
        Self.taken(self.stripe0.word.load(ordering: .acquiring))
            + Self.taken(self.stripe1.word.load(ordering: .acquiring))
            + Self.taken(self.stripe2.word.load(ordering: .acquiring))
            + Self.taken(self.stripe3.word.load(ordering: .acquiring))
    }

    /// Whether threads count in stripes of their own (see ``countSuccess(atNanoseconds:)``).
    var countsInThreadStripes: Bool {
        self.threadsCountApart.load(ordering: .relaxed)
    }

    /// Makes threads count in stripes of their own, as a collision in the first stripe does;
    /// the stripes other than the first are published from the next publication on. For tests.
    func separateThreads() {
        self.threadsCountApart.store(true, ordering: .relaxed)
    }

    /// The count a stripe's word holds, or zero if it holds no publication.
    private static func taken(_ word: UInt64) -> Int {
        word & Self.publishedBit != 0 ? Int(word & Self.countMask) : 0
    }

    /// The stripe this thread counts in once threads count apart: the first time a thread asks,
    /// the next in turn, kept in a thread-specific slot (a POSIX key) from then on; stripe 0
    /// where there is no slot.
    @inline(__always)
    func stripeIndex() -> Int {
        #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
            guard let key = self.threadKey else { return 0 }
            // The slot holds the stripe plus one, so that a thread's first look finds `nil`.
            if let value = pthread_getspecific(key) { return Int(bitPattern: value) &- 1 }
            return Self.assignStripe(key)
        #else
            return 0
        #endif
    }

    #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
        /// Gives this thread the next stripe in turn, and keeps it in the thread's slot (if
        /// the system lets it: otherwise the thread takes this path again at its next success).
        @inline(never)
        private static func assignStripe(_ key: pthread_key_t) -> Int {
            let index = nextStripe.wrappingAdd(1, ordering: .relaxed).oldValue & (Self.count - 1)
            _ = pthread_setspecific(key, UnsafeRawPointer(bitPattern: index + 1))
            return index
        }
    #endif
}

#if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
    /// The thread-specific slot holding each thread's stripe (the stripe plus one, not a pointer
    /// to anything, so there is nothing to free when the thread exits); `nil` if the system had
    /// no key left, and then every thread counts in stripe 0.
    private let stripeKey: pthread_key_t? = {
        var key = pthread_key_t()
        return pthread_key_create(&key, nil) == 0 ? key : nil
    }()

    /// The stripe the next thread to count gets, before reduction to the stripe count.
    private let nextStripe = Atomic<Int>(0)
#endif
