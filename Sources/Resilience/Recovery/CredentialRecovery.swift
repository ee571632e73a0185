/// Refreshes a credential once for every call that finds it refused, then lets each of them retry.
///
/// When an access token expires, every request in flight fails with it. Left to
/// themselves, twenty concurrent requests start twenty refreshes, and with a
/// rotating refresh token all but the first fail. A recovery shares one refresh
/// among all of them:
///
/// - the first call that fails for its credential starts the refresh; calls that
///   fail while it runs wait for it;
/// - a call whose request carried a credential older than the last successful
///   refresh does not refresh again: it retries with the newer credential;
/// - a refresh that fails for good (the auth server refused the session: a 400 or a
///   401, an OAuth 2.0 `invalid_grant`, an error of the app's own, or an SDK code that
///   the waiting calls' REST classifier lists as a failed token refresh) ends every
///   waiting call with its error, and calls that later fail with the same stale
///   credential get that error too, without a new refresh, until ``replace(with:)``
///   installs a credential obtained another way (the person signed in again);
/// - a refresh that fails for now (the auth server answered 429, 408 or a 5xx a call is retried after, asked
///   for a wait, timed out or could not be reached because the device was offline)
///   hands every waiting call its error too, but says nothing about the session: a
///   call through a ``RetryPolicy`` with attempts left waits and asks again (see
///   ``RetryPolicy/execute(recovering:waitingFor:idempotency:operation:)``), and a
///   later call refreshes again, once the failure's retry-after hint (a 429's or a
///   503's `Retry-After`), if it had one, has passed on the recovery's clock; until
///   then calls get the same error without a refresh, so a rate-limited auth server
///   is not hammered;
/// - calls that asked again after a failed refresh share the next one as they shared
///   that one: a call whose wait ended after that next refresh failed takes its
///   failure instead of starting another, so however their waits differ, one refresh
///   runs per round;
/// - cancelling a waiting call ends that call at once and never cancels the
///   refresh the others wait for: the refresh runs in a task of its own.
///
/// Hand it to a ``RetryPolicy``, which passes each attempt the current credential
/// and recovers at most once per call:
///
/// ```swift
/// let recovery = CredentialRecovery(credential: storedToken) { stale in
///     try await auth.refresh(using: stale)
/// }
/// let profile = try await policy.execute(recovering: recovery) { token in
///     try await api.profile(token: token)
/// }
/// ```
///
/// Which failures ask for a new credential is decided from the one
/// ``FailureAnalysis``: by default ``FailureAnalysis/needsCredentials`` (HTTP 401
/// and 407, URL loading authentication errors, CloudKit's `notAuthenticated`,
/// a REST service's expired-token codes). The same analysis of the refresh's own
/// error tells a refresh that failed for good from one that failed for now; a call
/// through a policy whose ``RESTServiceErrorClassifier`` lists
/// ``RESTServiceErrorClassifier/tokenRefreshFailureCodes`` also reads those codes as
/// the session's end, in the refresh's error and in its own.
public final class CredentialRecovery<Credential: Sendable>: Sendable {
    /// A credential and its generation: how many times the recovery's credential had changed when it was read.
    public struct Snapshot: Sendable {
        /// The credential.
        public let credential: Credential
        /// 0 for the initial credential, one more after each successful refresh or replacement.
        public let generation: UInt64

        init(_ stamped: (credential: Credential, generation: UInt64)) {
            self.credential = stamped.credential
            self.generation = stamped.generation
        }
    }

    /// Decides whether a failure asks for a new credential.
    public let isCredentialFailure: @Sendable (any Error, FailureAnalysis) -> Bool

    private let storage: CredentialRecoveryStorage<Credential>

    /// Creates a recovery holding `credential`.
    ///
    /// - Parameters:
    ///   - credential: The credential calls use until the first refresh.
    ///   - isCredentialFailure: Whether a failure asks for a new credential; by default
    ///     ``FailureAnalysis/needsCredentials``. Return `true` for your own errors,
    ///     such as a body that says the token expired.
    ///   - clock: The clock on which a failed refresh's retry-after hint runs out;
    ///     inject a test clock in tests.
    ///   - refresh: Obtains a new credential from the stale one (whose refresh token it
    ///     may use). It runs in a task of its own, once for every group of calls that
    ///     need it. Throw the auth server's refusal (or an error of your own) to send
    ///     every waiting call to the sign-in screen; a failure that passes (a 429, a 503,
    ///     a device offline) does not: a call through a policy with attempts left tries
    ///     it again (a 429 excepted), and a later call refreshes again.
    public init(
        credential: Credential,
        isCredentialFailure: @escaping @Sendable (any Error, FailureAnalysis) -> Bool = { _, analysis in
            analysis.needsCredentials
        },
        clock: some Clock<Duration> = ContinuousClock(),
        refresh: @escaping @Sendable (Credential) async throws -> Credential
    ) {
        self.isCredentialFailure = isCredentialFailure
        self.storage = CredentialRecoveryStorage(credential: credential, clock: ElapsedClock(clock), refresh: refresh)
    }

    /// The credential to use now, with its generation.
    public var current: Snapshot {
        Snapshot(self.storage.current)
    }

    /// Returns the credential that replaces `stale`, refreshing it at most once for all concurrent callers.
    ///
    /// Returns at once when a newer credential than `stale` exists already. Otherwise
    /// waits for the refresh that is running, or starts one.
    ///
    /// - Parameter stale: The credential a refused request carried, as read from ``current``.
    /// - Returns: The newer credential.
    /// - Throws: The refresh's error when it failed: now, or earlier for this same
    ///   credential when that refresh failed for good or its retry-after hint has not
    ///   passed yet. `CancellationError` as soon as the calling task is cancelled while it
    ///   waits, or as its wait ends (the answer came, the task had not yet run on): no
    ///   credential for a caller that has left, so it sends no request with it. The
    ///   refresh goes on for the other callers.
    public func recover(after stale: Snapshot) async throws -> Snapshot {
        let answer = await self.storage.recover(after: stale.generation)
        // A cancellation that came as the wait ended counts as one during it. Only after a wait:
        // a credential newer than `stale`, found at once, is returned as it is.
        if answer.waited, Task.isCancelled { throw CancellationError() }
        return try Snapshot(answer.result.get())
    }

    /// Waits as ``recover(after:)`` does, for a call through a ``RetryPolicy`` that may ask again
    /// after a refresh that failed for now; `seen` is the round of the failed refresh it got last,
    /// `judge` the policy's REST classifier that lists token refresh failure codes, if any.
    func recover(
        after stale: Snapshot, seen: UInt64?, budget: RetryBudget?, judge: RESTServiceErrorClassifier?
    ) async -> CredentialRecoveryStorage<Credential>.Answer {
        await self.storage.recover(after: stale.generation, seen: seen, budget: budget, judge: judge)
    }

    /// The time left until `instant` on the recovery's clock; zero once it has passed.
    func timeLeft(until instant: Duration) -> Duration {
        self.storage.timeLeft(until: instant)
    }

    /// Installs a credential obtained another way, such as after the person signed in again.
    ///
    /// It starts a new generation, so calls that carried an older credential retry
    /// with this one, and it clears the error of a failed refresh. A refresh still running
    /// when it is called is overtaken: the calls waiting for it retry with this credential
    /// whatever the refresh does, and should it fail, its failure costs their
    /// ``RetryBudget``s nothing (a refresh that fails for the current credential costs each one token).
    /// - Returns: The new credential with its generation.
    @discardableResult
    public func replace(with credential: Credential) -> Snapshot {
        Snapshot(self.storage.replace(with: credential))
    }

    /// The number of calls waiting for a refresh now.
    package var waitingCallCount: Int {
        self.storage.waiterCount
    }

    /// Whether the recovery's lock is held now; for tests that check no app code runs under it.
    package var isLockHeld: Bool {
        self.storage.isLockHeld
    }

    /// Suspends until at least `count` calls wait for a refresh: a synchronization point for tests.
    package func waitForWaitingCalls(count: Int) async {
        await self.storage.waitForWaiters(count: count)
    }
}
