/// Decides whether a failure is worth another attempt.
///
/// Return `nil` for errors the classifier has no opinion about; the next
/// classifier in a chain (see ``fallingBack(to:)``) or, at the end,
/// ``DefaultRetryClassifier`` decides them.
///
/// The ``Rulebook``'s rules sit above every classifier and cannot be
/// overridden: a cancelled call is never retried, a failure that reports HTTP
/// status 429 anywhere in its chain is never retried, and a request that is not
/// idempotent is never sent twice once it may have reached the server. A
/// classifier decides only the failures the rules leave open; about a call the
/// idempotency rule stops, it is asked only whether the person must sign in
/// (``RetryStopReason/authenticationRequired``), which the call then reports.
///
/// ```swift
/// struct InventoryClassifier: RetryClassifier {
///     func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
///         switch error {
///         case InventoryError.locked: .retry(after: .milliseconds(50))
///         case InventoryError.outOfStock: .doNotRetry
///         default: nil
///         }
///     }
/// }
/// ```
public protocol RetryClassifier: Sendable {
    /// The decision for `error`, or `nil` to leave it to the next classifier.
    ///
    /// Called in the caller's isolation after each failed attempt. Keep it fast and
    /// free of side effects: it may be called for every failure of every call.
    func decision(for error: any Error, context: RetryContext) -> RetryDecision?

    /// The idempotency this classifier was made for, if any, such as the method
    /// given to `HTTPRetryClassifier(method:)`.
    ///
    /// The hard rules use it when neither the failed request nor the call says
    /// (see ``Idempotency``). Defaults to `nil`.
    var declaredIdempotency: Idempotency? { get }
}

extension RetryClassifier {
    /// `nil`: the classifier was not made for requests of one kind.
    public var declaredIdempotency: Idempotency? { nil }
}

/// A classifier made from a closure.
public struct ClosureRetryClassifier: RetryClassifier {
    private let body: @Sendable (any Error, RetryContext) -> RetryDecision?

    /// Creates a classifier that calls `body` for each failure.
    public init(_ body: @escaping @Sendable (any Error, RetryContext) -> RetryDecision?) {
        self.body = body
    }

    /// Returns what the closure returns.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        self.body(error, context)
    }
}

/// A chain of classifiers asked in order; the first with an opinion decides.
public struct ChainedRetryClassifier: RetryClassifier {
    /// The classifiers, in the order they are asked.
    public let classifiers: [any RetryClassifier]

    /// Creates a chain that asks `classifiers` in order.
    public init(_ classifiers: [any RetryClassifier]) {
        self.classifiers = classifiers
    }

    /// The first idempotency a classifier in the chain declares.
    public var declaredIdempotency: Idempotency? {
        for classifier in self.classifiers {
            if let idempotency = classifier.declaredIdempotency { return idempotency }
        }
        return nil
    }

    /// The first non-`nil` decision in the chain, or `nil` when none has an opinion.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        for classifier in self.classifiers {
            if let decision = classifier.decision(for: error, context: context) {
                return decision
            }
        }
        return nil
    }
}

extension RetryClassifier {
    /// A chain that asks this classifier first and `next` when this one returns `nil`.
    public func fallingBack(to next: some RetryClassifier) -> ChainedRetryClassifier {
        var chain = (self as? ChainedRetryClassifier)?.classifiers ?? [self]
        chain.append(next)
        return ChainedRetryClassifier(chain)
    }
}

extension RetryClassifier where Self == ClosureRetryClassifier {
    /// A classifier made from a closure; return `nil` to defer to the next classifier.
    ///
    /// ```swift
    /// let policy = try RetryPolicy(classifier: .closure { error, _ in
    ///     (error as? PaymentError)?.isDeclined == true ? .doNotRetry : nil
    /// })
    /// ```
    public static func closure(
        _ body: @escaping @Sendable (any Error, RetryContext) -> RetryDecision?
    ) -> ClosureRetryClassifier {
        ClosureRetryClassifier(body)
    }
}

extension RetryClassifier where Self == DefaultRetryClassifier {
    /// The package's default rules; see ``DefaultRetryClassifier``.
    public static var `default`: DefaultRetryClassifier { DefaultRetryClassifier() }
}
