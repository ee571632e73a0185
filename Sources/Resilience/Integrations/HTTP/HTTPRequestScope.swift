/// The request a ``RetryPolicy`` is sending through `URLSession`, visible to
/// classifiers while the call runs.
///
/// Classifiers are chosen when a policy is made, but a policy is shared by many
/// requests; ``RetryPolicy/data(for:session:acceptableStatusCodes:allowsNonIdempotentRetries:isolation:)``
/// binds the request's method here for the length of one call so that
/// ``HTTPRetryClassifier`` and ``DefaultRetryClassifier`` can tell a `POST`
/// from a `GET`. Classifiers run in the calling task, so they see the binding.
struct HTTPRequestScope: Sendable {
    /// The request's method, upper-cased.
    var method: String
    /// Whether the caller allowed retrying a non-idempotent request the server may have acted on.
    var allowsNonIdempotentRetries: Bool

    @TaskLocal static var current: HTTPRequestScope?
}
