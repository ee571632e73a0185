import Foundation

/// Which of the library's protocols and types an error is, as the failure analysis and the walk
/// through a chain ask of every error in it: found once a type and remembered.
///
/// A cast that fails to a protocol looks through the conformance tables, and a cast to a concrete
/// type compares metadata through the runtime's general cast: together over a third of what a
/// `URLError`'s analysis cost (counted with callgrind). What a value type or a Swift class is
/// depends on its type alone, so the answers are kept by type, under a lock that guards the
/// dictionary only (no user code runs under it). An `NSError`'s answers are not: on Apple
/// platforms a cast unwraps the Swift error an `NSError` may box, so an `NSError` (and its
/// subclasses) is asked each time, as ``unknown`` says.
struct ErrorKinds: OptionSet, Sendable {
    let rawValue: UInt16

    /// ``HTTPStatusReporting``.
    static let statusReporting = ErrorKinds(rawValue: 1 << 0)
    /// ``RetryAfterProviding``.
    static let retryAfterProviding = ErrorKinds(rawValue: 1 << 1)
    /// ``IdempotencyReporting``.
    static let idempotencyReporting = ErrorKinds(rawValue: 1 << 2)
    /// ``RequestDeliveryReporting``.
    static let deliveryReporting = ErrorKinds(rawValue: 1 << 3)
    /// ``UnderlyingErrorProviding``.
    static let underlyingProviding = ErrorKinds(rawValue: 1 << 4)
    /// ``RetryableError``.
    static let retryable = ErrorKinds(rawValue: 1 << 5)
    /// `CancellationError`.
    static let cancellation = ErrorKinds(rawValue: 1 << 6)
    /// A library time limit's error (``AttemptTimeoutError``, ``TimeoutError``).
    static let timeLimit = ErrorKinds(rawValue: 1 << 7)
    /// `URLError`.
    static let urlError = ErrorKinds(rawValue: 1 << 8)
    /// `DecodingError` or `EncodingError`.
    static let codingError = ErrorKinds(rawValue: 1 << 9)
    /// An `NSError` or a subclass of it.
    static let nsError = ErrorKinds(rawValue: 1 << 10)
    /// ``HTTPResponseError``, which may record its request's delivery (``HTTPResponseError/recordedDelivery``).
    static let httpResponseError = ErrorKinds(rawValue: 1 << 11)

    /// What an `NSError` is taken to be: anything, so that every cast is made.
    static let unknown = ErrorKinds(rawValue: .max)

    /// The answers by type.
    private static let known = Lock<[ObjectIdentifier: ErrorKinds]>([:])
    /// How many types ``known`` remembers: a program has a bounded number of error types, but
    /// generic ones can be made without end.
    static let maximumKnownTypes = 4_096

    /// What `error` is.
    static func of(_ error: any Error) -> ErrorKinds {
        let errorType = type(of: error)
        if errorType is NSError.Type { return .unknown }
        let key = ObjectIdentifier(errorType)
        if let kinds = Self.known.withLock({ $0[key] }) { return kinds }
        let kinds = Self.asking(error)
        Self.known.withLock { known in
            if known.count < Self.maximumKnownTypes { known[key] = kinds }
        }
        return kinds
    }

    /// What `error` is, found by casting it to each.
    private static func asking(_ error: any Error) -> ErrorKinds {
        var kinds: ErrorKinds = []
        if error is any HTTPStatusReporting { kinds.insert(.statusReporting) }
        if error is any RetryAfterProviding { kinds.insert(.retryAfterProviding) }
        if error is any IdempotencyReporting { kinds.insert(.idempotencyReporting) }
        if error is any RequestDeliveryReporting { kinds.insert(.deliveryReporting) }
        if error is any UnderlyingErrorProviding { kinds.insert(.underlyingProviding) }
        if error is any RetryableError { kinds.insert(.retryable) }
        if error is CancellationError { kinds.insert(.cancellation) }
        if LateOperationError.isTimeLimit(error) { kinds.insert(.timeLimit) }
        if error is URLError { kinds.insert(.urlError) }
        if error is DecodingError || error is EncodingError { kinds.insert(.codingError) }
        if error is HTTPResponseError { kinds.insert(.httpResponseError) }
        return kinds
    }
}
