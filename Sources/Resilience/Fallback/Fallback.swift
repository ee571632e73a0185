/// Answers with a value, or a second operation, when a call finally fails or is rejected.
///
/// The fallback sees the original failure (``FallbackContext/error``) and its
/// ``FailureAnalysis``; it never answers for a call the caller cancelled (or a
/// hedge that lost its race): that error goes through unchanged, because no one
/// is waiting for the answer. Put it outermost, so it answers for whatever the
/// strategies inside finally give up with: a retry's last error, an open
/// breaker, a full limiter, a time-out.
///
/// An answer that throws keeps the hard stops of the failure it handled: when that failure
/// got an HTTP 429, or was a request that may not run twice (by the enclosing call's
/// declaration or its own report) and may have left, a ``RetryPolicy`` around the fallback
/// stops on the answer's error (``RetryStopReason/tooManyRequests``,
/// ``RetryStopReason/notIdempotent``), whatever its classifier says. The caller catches the
/// answer's error unchanged; see <doc:Fallbacks>.
///
/// ```swift
/// let cached = Fallback<[Article]>.value([])
/// let articles = try await cached.execute {
///     try await feed.latest()
/// }
/// ```
public struct Fallback<Value: Sendable>: Sendable {
    /// The name reported in events.
    public let name: String

    let handles: @Sendable (FallbackContext) -> Bool
    let answer: @Sendable (FallbackContext) async throws -> Value
    let observer: (any StrategyObserver)?

    /// Creates a fallback that runs `answer` for the failures `handles` accepts.
    ///
    /// - Parameters:
    ///   - name: The name reported in events.
    ///   - handles: Whether to answer for a failure; by default, for every failure
    ///     except the caller's cancellation.
    ///   - observer: Receives a ``StrategyEvent/Kind/fallbackUsed`` event each time it answers,
    ///     once the answer has returned: an answer that throws sends none.
    ///   - answer: The second operation; it may throw, and its error is the call's.
    public init(
        name: String = "fallback",
        handles: @escaping @Sendable (FallbackContext) -> Bool = { _ in true },
        observer: (any StrategyObserver)? = nil,
        answer: @escaping @Sendable (FallbackContext) async throws -> Value
    ) {
        self.name = name
        self.handles = handles
        self.observer = observer
        self.answer = answer
    }

    /// A fallback that answers every failure, other than the caller's cancellation, with `value`.
    public static func value(_ value: Value, name: String = "fallback") -> Fallback {
        Fallback(name: name) { _ in value }
    }

    /// Runs `operation`, and answers for its failure.
    ///
    /// - Parameter operation: The call. It runs in the caller's isolation.
    /// - Returns: The operation's value, or the fallback's.
    /// - Throws: The caller's cancellation unchanged; a failure `handles` declines,
    ///   unchanged; or the error of the fallback's own answer.
    @inlinable
    public nonisolated(nonsending) func execute(operation: () async throws -> Value) async throws -> Value {
        do {
            return try await operation()
        } catch {
            return try await self.recovered(from: error)
        }
    }

    /// The failure path of ``execute(operation:)``: the answer, or the error to throw.
    ///
    /// Inlined so that the answer comes back by value. Returned by the generic,
    /// out-of-line ``recover(from:)``, it would travel through a stack slot that
    /// the caller keeps for the whole call; the compiler counts freeing that slot,
    /// after the operation returns, as work that needs the caller's executor, and
    /// keeps the executor switch after the operation even on success (about 100
    /// instructions per call from a nonisolated task, with Swift 6.3.1). Here the
    /// slot belongs to the failure path alone.
    @inlinable
    nonisolated(nonsending) func recovered(from error: any Error) async throws -> Value {
        var answer: Value?
        try await self.recover(from: error, into: &answer)
        // `recover(from:into:)` either throws or sets it. Not `answer!`: a trap is one
        // more way out of a caller's loop, which kept the loop's own switch.
        guard let answer else { throw error }
        return answer
    }

    /// The failure path of a pipeline stage, as ``recovered(from:)``: the answer when the call's
    /// value is this fallback's, else the failure.
    @inlinable
    nonisolated(nonsending) func recovered<Other>(from error: any Error, as _: Other.Type) async throws -> Other {
        var answer: Other?
        try await self.recover(from: error, into: &answer)
        guard let answer else { throw error }  // `recover(from:into:)` either throws or sets it
        return answer
    }

    /// Sets `answer` to this fallback's answer when the call's value is this fallback's;
    /// otherwise throws `error`.
    @usableFromInline
    nonisolated(nonsending) func recover<Other>(from error: any Error, into answer: inout Other?) async throws {
        guard Other.self == Value.self else { throw error }
        answer = (try await self.recover(from: error) as! Other)  // the same type: the cast cannot fail
    }

    /// The failure path: the rules first, then `handles`, then the answer.
    @usableFromInline
    nonisolated(nonsending) func recover(from error: any Error) async throws -> Value {
        let analysis = FailureAnalysis(error)
        // A caller who gave up is waiting for nothing; a superseded hedge neither.
        if analysis.interruption == .caller || analysis.interruption == .superseded { throw error }
        let context = FallbackContext(error: error, analysis: analysis)
        guard self.handles(context) else { throw error }
        // Reported once the answer is in: an answer that throws answered nothing, and its error goes on unreported.
        let value: Value
        do {
            value = try await self.answer(context)
        } catch {
            // The answer's error stands for the handled failure: a hard stop that failure called
            // for (a 429, a request that may not run twice and may have left) goes with it.
            NestedRetryLedger.recordFailure(error, ofAnswerTo: analysis)
            throw error
        }
        self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .fallbackUsed, error: error))
        return value
    }
}
