/// The error an attempt ends with when it outlives its per-attempt timeout.
///
/// The request may have reached the server, so a call that is not idempotent
/// is not retried after it (see ``Idempotency``); an idempotent one is, like
/// any transient failure. A ``CircuitBreaker`` counts it as a failure, unless what
/// the attempt ended with proves it never reached the dependency (see below).
///
/// The limit waits for the cancelled attempt to return. When the attempt fails
/// after the limit fired (its operation ignored the cancellation, or was past its
/// last cancellation point), its error is kept in ``operationError`` and the
/// rules read it: a request it reports as not idempotent is not sent again, an
/// HTTP 429 in it is not retried, its retry-after hint is honoured (see
/// ``FailureAnalysis``). This error stays a time-out for everything else.
public struct AttemptTimeoutError: RetryableError, IdempotencyReporting, RequestDeliveryReporting, Hashable,
    CustomStringConvertible
{
    /// The time the attempt was allowed.
    public let timeout: Duration
    /// The idempotency the timed-out call was declared with, if any, so that a
    /// policy around the one that timed it out does not repeat it either;
    /// ``Idempotency/notIdempotent`` when a call inside the attempt declared itself so.
    public let requestIdempotency: Idempotency?
    /// The error the attempt's operation failed with after the limit fired, if it did;
    /// `nil` when it stopped at the limit's cancellation (`CancellationError`).
    ///
    /// Not part of the error's chain (``UnderlyingErrorProviding``, `NSUnderlyingErrorKey`):
    /// a classifier judges a time-out, not what the operation said after it. The rules that
    /// no classifier changes read it all the same (see ``FailureAnalysis``), in the error's
    /// `NSError` form too (under ``ErrorHints/lateOperationErrorKey``), and
    /// ``requestIdempotency`` already holds what it reports about its request. It takes no
    /// part in equality and hashing.
    public let operationError: (any Error)?
    /// How long before the limit ended the attempt ``operationError`` had been received, when a
    /// ``RetryPolicy`` nested in the attempt was waiting to retry it (or an error it holds as it
    /// came, wrapped by the code in between): its retry-after hint runs from that response, so the
    /// rules read it less this (see ``FailureAnalysis/retryAfter``), in the `NSError` form too.
    /// `nil` for a late failure of the operation's own, which came as the limit ended, and for
    /// one that rebuilt the policy's error (see `LateOperationError.age(of:)`).
    let operationErrorAge: Duration?
    /// Whether the limit saw a request of the attempt it ended that may have left before
    /// ``operationError`` (a ``RetryPolicy`` in the attempt tried once and lost the connection,
    /// say): that error then proves nothing about the attempt's request, however it reads.
    let earlierRequestMayHaveLeft: Bool
    /// When the limit's deadline was and when it ended the attempt, for a limit enclosing it
    /// (see `TimeLimitEnd`); `nil` for an error made with the public initializer. Not compared.
    let limitEnd: TimeLimitEnd?

    /// Creates the error for an attempt allowed `timeout`.
    ///
    /// - Parameters:
    ///   - timeout: The time the attempt was allowed.
    ///   - requestIdempotency: The idempotency of the timed-out call, if known.
    ///   - operationError: The error the operation failed with after the limit fired, if any.
    public init(timeout: Duration, requestIdempotency: Idempotency? = nil, operationError: (any Error)? = nil) {
        self.timeout = timeout
        self.requestIdempotency = requestIdempotency
        self.operationError = operationError
        self.operationErrorAge = nil
        self.earlierRequestMayHaveLeft = false
        self.limitEnd = nil
    }

    /// Creates the error for an attempt allowed `timeout` whose late error had been received
    /// `operationErrorAge` before the limit ended it, after a request of the attempt that may
    /// have left when `earlierRequestMayHaveLeft`, as `limitEnd` says.
    init(
        timeout: Duration, requestIdempotency: Idempotency?, operationError: (any Error)?,
        operationErrorAge: Duration?, earlierRequestMayHaveLeft: Bool = false, limitEnd: TimeLimitEnd? = nil
    ) {
        self.timeout = timeout
        self.requestIdempotency = requestIdempotency
        self.operationError = operationError
        self.operationErrorAge = operationError == nil ? nil : operationErrorAge
        self.earlierRequestMayHaveLeft = operationError != nil && earlierRequestMayHaveLeft
        self.limitEnd = limitEnd
    }

    /// Always `true`: a timed-out attempt may succeed next time, when it may be repeated.
    public var isRetryable: Bool { true }

    /// Always ``RequestDelivery/mayHaveBeenSent``: the server may be working on the request.
    public var requestDelivery: RequestDelivery { .mayHaveBeenSent }

    /// `attempt timed out after …`.
    public var description: String { "attempt timed out after \(self.timeout)" }

    /// Whether the two report the same limit and idempotency; ``operationError`` is not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.timeout == rhs.timeout && lhs.requestIdempotency == rhs.requestIdempotency
    }

    /// Hashes the limit and the idempotency; ``operationError`` is left out, as in `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.timeout)
        hasher.combine(self.requestIdempotency)
    }
}
