import Foundation

/// What a library time limit keeps of the operation's own failure when the operation
/// fails after the limit fired.
///
/// Every library time limit waits for the attempt it cancelled to return, as structured
/// concurrency does. An operation that ignores the cancellation, or that was past its last
/// cancellation point (a response already read, being validated), fails with an error of
/// its own after the limit fired, and that error may say what the rules must honour: the
/// request was a `POST`, the server answered 429, it asked for a pause, the device is
/// offline. The limit's error (``AttemptTimeoutError``, ``TimeoutError``) carries it as
/// `operationError`, and in its `NSError` form under ``ErrorHints/lateOperationErrorKey``;
/// ``FailureAnalysis`` and ``ErrorHints`` read those facts from either.
///
/// A late `CancellationError` is kept as nothing: it is the limit's own cancellation,
/// said back. A late value is returned, as the value of any call that finished: the
/// work was done, and a time-out in its place would have a policy around the limit
/// repeat a call that succeeded.
@usableFromInline
enum LateOperationError {
    /// `error`, unless it is the cancellation the limit caused.
    static func kept(_ error: any Error) -> (any Error)? {
        error is CancellationError ? nil : error
    }

    /// Whether a library time limit enclosing the current task has fired: a strategy
    /// that runs attempts of its own (``Hedging``) then ends a cancelled call with its
    /// attempts' failure, for the limit to keep, rather than with `CancellationError`.
    @usableFromInline
    static func enclosingLimitFired() -> Bool {
        CallScope.current.timeLimitFired
    }

    /// The operation's late error, when `error` is a library time limit's error that holds one,
    /// as the Swift value or as a plain `NSError` bridged from it (see ``ofBridged(_:)``).
    ///
    /// Concrete casts: they cost a comparison of type metadata each, where a cast to a
    /// protocol would look up a conformance on every error of every chain walked.
    static func of(_ error: any Error) -> (any Error)? {
        if let limit = error as? AttemptTimeoutError { return limit.operationError }
        if let limit = error as? TimeoutError { return limit.operationError }
        guard BridgedLibraryError.kind(of: error) == .timeLimit else { return nil }
        return self.ofBridged(error)
    }

    /// The operation's late error kept in the `userInfo` of `error`, a library time limit's
    /// error as a plain `NSError` (``BridgedLibraryError/Kind/timeLimit``): bridged from the
    /// Swift value, or a copy of that made with the same `userInfo` (an SDK's callback, an
    /// Objective-C boundary).
    ///
    /// The entry (``ErrorHints/lateOperationErrorKey``) holds the late error as it was thrown,
    /// not its `NSError` form, so a Swift error that reports its facts through protocols (an
    /// HTTP status, a hint) and bridges to nothing that says them keeps them.
    static func ofBridged(_ error: any Error) -> (any Error)? {
        self.ofBridged(ErrorChain.Node(error))
    }

    /// The late error kept in the `userInfo` of the node's error, read from its shared `NSError` form.
    static func ofBridged(_ node: ErrorChain.Node) -> (any Error)? {
        node.userInfo[ErrorHints.lateOperationErrorKey] as? any Error
    }

    /// How long before its limit ended the attempt the late error of `error` (a library time
    /// limit's error, as the Swift value) had been received, when a policy nested in the attempt
    /// was waiting to retry it; `nil` otherwise.
    ///
    /// The limit learns the age from the policy it cut short, for the very error that policy
    /// ended with, found in the late error's chain by its identity (see
    /// `TimeLimitSignal.takeLateErrorAge(of:)`): as thrown, or kept as it came by a wrapper of the
    /// app's (an enum case's payload, a stored property); an `NSError` instance, or a library time
    /// limit's error, also bridged or under `NSUnderlyingErrorKey`. A late error that rebuilt it,
    /// or that keeps a Swift value where reading it back makes a new value (bridged, or under an
    /// `NSError`'s `NSUnderlyingErrorKey`, on Linux), carries no age: its hint then runs whole
    /// from the limit's end, which waits longer than the server asked, never shorter. The limit's own error
    /// keeps the age wherever it goes: wrapped, it is the same value; bridged to `NSError`, the age
    /// is in its `userInfo` (``ageOfBridged(_:)``).
    static func age(of error: any Error) -> Duration? {
        if let limit = error as? AttemptTimeoutError { return limit.operationErrorAge }
        if let limit = error as? TimeoutError { return limit.operationErrorAge }
        return nil
    }

    /// The age of the late error kept in the `userInfo` of the node's error, a library time
    /// limit's error as a plain `NSError` (see ``age(of:)``): bridged from the Swift value, or
    /// copied from that with the same `userInfo`.
    static func ageOfBridged(_ node: ErrorChain.Node) -> Duration? {
        guard let age = node.userInfo[BridgedLibraryError.lateOperationErrorAgeKey] as? Duration,
            age >= .zero
        else { return nil }
        return age
    }

    /// Whether the library time limit of `error` (its Swift value) saw a request of the attempt
    /// it ended that may have left before the operation's late error: then that error proves
    /// nothing about the attempt's request (see `TimeLimitSignal.noteARequestMayHaveLeft(from:)`).
    static func requestLeftEarlier(in error: any Error) -> Bool {
        if let limit = error as? AttemptTimeoutError { return limit.earlierRequestMayHaveLeft }
        if let limit = error as? TimeoutError { return limit.earlierRequestMayHaveLeft }
        return false
    }

    /// ``requestLeftEarlier(in:)`` for a time limit's error as a plain `NSError`, read from its
    /// shared `NSError` form (``BridgedLibraryError/earlierRequestKey``).
    static func requestLeftEarlier(inBridged node: ErrorChain.Node) -> Bool {
        node.userInfo[BridgedLibraryError.earlierRequestKey] as? Bool ?? false
    }

    /// Whether `error` is one of the library's time-limit errors, whose late error the
    /// chain does not walk into (see ``ErrorChain/children(of:room:allowance:reflection:)``).
    static func isTimeLimit(_ error: any Error) -> Bool {
        error is AttemptTimeoutError || error is TimeoutError
    }

    /// `reported`, the idempotency a limit reports for the attempt it ended, made stricter by
    /// what the operation's late error reports about its request.
    static func idempotency(_ reported: Idempotency?, tightenedBy late: (any Error)?) -> Idempotency? {
        guard let late, reported?.isIdempotent ?? true else { return reported }
        let own = FailureAnalysis(late, isCancelled: false, timeLimitFired: false).requestIdempotency
        guard let own else { return reported }
        return reported?.tightened(by: own) ?? own
    }
}
