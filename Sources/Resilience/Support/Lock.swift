#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Bionic)
    import Bionic
#endif

/// A mutual-exclusion lock that owns the state it protects.
///
/// We use our own lock over `pthread_mutex_t` rather than `Synchronization.Mutex`
/// because ThreadSanitizer on Linux cannot see `Mutex` (it waits on a raw futex
/// from the uninstrumented standard library), so a correct `Mutex` reports false
/// races and would make the `--sanitize=thread` gate meaningless. The pthread
/// calls are intercepted by ThreadSanitizer, so this lock keeps the gate honest.
/// The benchmark executable measures what this choice costs.
///
/// The mutex lives in its own heap allocation and is never addressed through
/// `&storedProperty`, whose address Swift does not guarantee to be stable.
///
/// Rules for callers: never call user code or `await` inside `withLock`; a
/// state machine method returns an action, and the caller performs it after
/// the lock is released.
@usableFromInline
package final class Lock<State>: @unchecked Sendable {
    // @unchecked Sendable: this is the one type in the package that carries it.
    // What guards each stored property:
    // - `mutex`: immutable after init; the pthread mutex it points to is itself
    //   the synchronization primitive, safe to use from any thread.
    // - `state`: guarded by `mutex`; read and written only inside `withLock`,
    //   between pthread_mutex_lock and pthread_mutex_unlock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // @exclusivity(unchecked): the mutex already makes every access to `state`
    // exclusive, so Swift's run-time exclusivity check on this class property
    // (swift_beginAccess, about 4 ns per `withLock`, measured by the benchmark's
    // lock.pthread row) adds nothing. The compile-time checks still apply.
    @exclusivity(unchecked) @usableFromInline var state: State

    /// Creates a lock guarding `initialState`.
    package init(_ initialState: State) {
        self.state = initialState
        self.mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(self.mutex, nil)
        precondition(result == 0, "pthread_mutex_init failed with \(result)")
    }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deinitialize(count: 1)
        self.mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the state.
    ///
    /// Inlinable, so that generic callers specialized in other modules (the registry's
    /// lookup) lock without a call.
    @inlinable @inline(__always)
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        self.lock()
        defer { self.unlock() }
        return try body(&self.state)
    }

    /// Takes the mutex; out of line, so that inlined callers need not see the C library.
    @usableFromInline
    func lock() {
        pthread_mutex_lock(self.mutex)
    }

    /// Releases the mutex.
    @usableFromInline
    func unlock() {
        pthread_mutex_unlock(self.mutex)
    }

    /// Whether the lock is held now, by any thread, the caller included; for tests only.
    package var isHeld: Bool {
        guard pthread_mutex_trylock(self.mutex) == 0 else { return true }
        pthread_mutex_unlock(self.mutex)
        return false
    }
}
