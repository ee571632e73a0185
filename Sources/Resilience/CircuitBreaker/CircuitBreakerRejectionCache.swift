#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// The last ``CircuitBreakerOpenError`` each thread threw, already boxed as `any Error`, so that
/// a breaker rejecting call after call with the same error throws the same box again instead of
/// allocating one per call.
///
/// An `any Error` is a heap box; making one, and freeing it after the catch, is most of what a
/// rejection used to cost. The box is kept per thread, in a POSIX thread-specific slot, rather
/// than in the breaker, because a reference that other threads read without a lock cannot be
/// replaced safely: a reader could load it just before the writer drops the last reference, and
/// retain freed memory. Here no other thread ever reads the slot:
///
/// - The cache object is made by its thread, stored only in that thread's slot, and read and
///   written only by that thread, inside one synchronous call with no user code in it (the
///   observer hears of the rejection before the box is looked up).
/// - What leaves is a copy of the existential: a strong reference of its own, counted
///   atomically. When the thread replaces its entry, it drops only the cache's reference; a
///   box still being thrown, caught or kept elsewhere lives on until its last holder lets go.
/// - The boxed value is immutable (a struct of `let`s), so sharing one box between the callers
///   that rejected on the same thread shares only an equal, `Sendable` value.
/// - When the thread exits, the slot's destructor releases the cache and its box.
///
/// A box is reused only for an equal error (same breaker name, state and `retryAfter`), so the
/// value a caller catches is the one a fresh box would hold. Its identity is shared, though:
/// calls rejected alike on one thread catch the same box. The nested-retry ledger tells
/// failures apart by their box, so a ``RetryPolicy`` that retried a rejection to exhaustion
/// ends its call with an equal error in a box of its own and leaves its word about that box
/// (`RetryPolicy.noteStop(_:error:call:)`). A thread that alternates between two rejecting
/// breakers allocates each time, as without the cache.
final class CircuitBreakerRejectionCache {
    private var error: CircuitBreakerOpenError
    private var boxed: any Error

    private init(_ error: CircuitBreakerOpenError) {
        self.error = error
        self.boxed = error
    }

    /// The thread-specific slot the caches live in, or `nil` if the system had no key left (then
    /// nothing is cached).
    ///
    /// A breaker reads it once, when it is made, and passes it to
    /// ``boxed(in:breakerName:state:retryAfter:)``: read from a global at each rejection, the
    /// slot cost a check of the global's one-time initialization (`swift_once`) every time.
    static var slot: Slot? {
        #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
            threadKey.map(Slot.init)
        #else
            nil
        #endif
    }

    /// A thread-specific slot (a POSIX key) that holds each thread's cache.
    struct Slot: Sendable {
        #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
            let key: pthread_key_t
        #endif
    }

    /// Whether this cache holds the error these make, as `==` would say, checked in the order
    /// that settles a difference soonest: `retryAfter` changes most often, and the name is the
    /// same string (equal bits, no comparison of characters) when the same breaker made both.
    @inline(__always)
    private func holds(breakerName: String, state: CircuitBreakerState, retryAfter: Duration?) -> Bool {
        switch (self.error.retryAfter, retryAfter) {
        case (nil, nil): break
        case (let x?, let y?): guard x.attoseconds == y.attoseconds else { return false }
        default: return false
        }
        return self.error.state.kind == state.kind && self.error.breakerName == breakerName
    }

    /// A new box for the error these make, which replaces this cache's; out of line, as it runs
    /// once per thread and tick at most while a breaker stays open.
    @inline(never)
    private func replace(breakerName: String, state: CircuitBreakerState, retryAfter: Duration?) -> any Error {
        self.error = CircuitBreakerOpenError(breakerName: breakerName, state: state, retryAfter: retryAfter)
        self.boxed = self.error
        return self.boxed
    }

    /// The ``CircuitBreakerOpenError`` these make, as `any Error`: this thread's last box if it
    /// holds the same error, or a new box that becomes this thread's last. The error itself is
    /// made only for a new box.
    ///
    /// Inlined into the rejection: the look-up, the comparison and the retain of the box thrown
    /// again; a new box and a thread's first cache are made out of line.
    @inline(__always)
    static func boxed(
        in slot: Slot?, breakerName: String, state: CircuitBreakerState, retryAfter: Duration?
    ) -> any Error {
        #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
            if let slot, let pointer = pthread_getspecific(slot.key) {
                // The slot holds a reference for as long as this call runs: no retain needed.
                return Unmanaged<CircuitBreakerRejectionCache>.fromOpaque(pointer)._withUnsafeGuaranteedRef {
                    if $0.holds(breakerName: breakerName, state: state, retryAfter: retryAfter) { return $0.boxed }
                    return $0.replace(breakerName: breakerName, state: state, retryAfter: retryAfter)
                }
            }
        #endif
        return Self.firstBox(in: slot, breakerName: breakerName, state: state, retryAfter: retryAfter)
    }

    /// The error these make, in a new box, and this thread's cache made to hold it (when there is a slot).
    @inline(never)
    private static func firstBox(
        in slot: Slot?, breakerName: String, state: CircuitBreakerState, retryAfter: Duration?
    ) -> any Error {
        let error = CircuitBreakerOpenError(breakerName: breakerName, state: state, retryAfter: retryAfter)
        #if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
            if let slot {
                let cache = CircuitBreakerRejectionCache(error)
                if pthread_setspecific(slot.key, Unmanaged.passRetained(cache).toOpaque()) != 0 {
                    Unmanaged.passUnretained(cache).release()  // no slot: nothing to cache in
                }
                return cache.boxed
            }
        #endif
        return error
    }
}

#if canImport(Darwin) || canImport(Glibc) || canImport(Musl) || canImport(Bionic)
    /// The thread-specific slot of ``CircuitBreakerRejectionCache``; its destructor releases the
    /// cache when the thread exits; `nil` if the system had no key left, and then nothing is cached.
    private let threadKey: pthread_key_t? = {
        var key = pthread_key_t()
        #if canImport(Darwin)
            let status = pthread_key_create(&key) { pointer in
                Unmanaged<CircuitBreakerRejectionCache>.fromOpaque(pointer).release()
            }
        #else
            let status = pthread_key_create(&key) { pointer in
                guard let pointer else { return }
                Unmanaged<CircuitBreakerRejectionCache>.fromOpaque(pointer).release()
            }
        #endif
        return status == 0 ? key : nil
    }()
#endif
