/// Whether running a call twice has the same effect as running it once.
///
/// It decides what a retry may repeat. A call that is not idempotent (a `POST`
/// that creates an order) is sent again only after a failure that proves it
/// never reached the server; a timeout, a dropped connection or any answer from
/// the server (a 502, a 503) ends it. No classifier can change that.
///
/// Where the fact comes from. The call's reading is the first of:
/// 1. The call: `policy.execute(idempotency: .notIdempotent) { ... }`; policies
///    nested inside such a call inherit it.
/// 2. The policy's classifier (``RetryClassifier/declaredIdempotency``), such as
///    `HTTPRetryClassifier(method: "POST")`. Its "not idempotent" reaches the
///    calls nested in the policy's calls, as a declaration does, unless the call
///    or an enclosing one declared otherwise; its "idempotent" counts for that
///    policy's own decisions only, so it never overrides a nested policy that
///    knows its request is a `POST`.
/// 3. Otherwise the call is taken as idempotent: wrapping an operation in a retry
///    policy says it may run again.
///
/// That one reading serves every path: the call's failures, its success, and what it
/// tells the time limits and hedges around it. A declaration, the call's own or an
/// enclosing call's, always outranks the classifier: a policy made for a `POST` inside
/// a call declared ``Idempotency/idempotent`` retries its failures, and its success
/// stops nothing around it; one made for a `GET` inside a call declared
/// ``Idempotency/notIdempotent`` never sends its request again.
///
/// The request itself then has its say, carried by the error it failed with:
/// ``HTTPResponseError/requestIdempotency`` and the URL errors thrown by
/// `RetryPolicy.data(for:)` (in `ResilienceURLSession`), or any error adopting
/// ``IdempotencyReporting``. A report can make the call stricter, never looser:
/// an outer policy around `data(for:)` learns that the call sent a `POST`, but a
/// call declared not idempotent stays so when the request that failed was a
/// `GET` (it may have placed an order before reading the receipt). When one
/// failure reports several requests, the strictest report counts.
///
/// A nested call declared not idempotent speaks for its request to the layers
/// around it even when it succeeds: an attempt that holds it and fails afterwards
/// (the app rejects the answer) is not run again, whatever the outer call declared.
/// The policy hears of it through the scope its attempt runs in (a deadline, a
/// declaration, a time limit); a plain policy with none around it cannot, and
/// <doc:TheRulesNoClassifierCanChange> gives the workaround.
///
/// ```swift
/// let receipt = try await policy.execute(idempotency: .notIdempotent) {
///     try await payments.charge(order)
/// }
/// Idempotency.http(method: "POST")                                        // .notIdempotent
/// Idempotency.http(method: "POST", headers: ["Idempotency-Key": "8e03"])  // .idempotent
/// ```
public struct Idempotency: Sendable, Hashable, CustomStringConvertible {
    /// Whether the call may run twice.
    public let isIdempotent: Bool
    /// The HTTP method this was derived from, if any, as given; for messages only.
    public let method: String?

    private init(isIdempotent: Bool, method: String?) {
        self.isIdempotent = isIdempotent
        self.method = method
    }

    /// The call may run twice with the same effect as once.
    public static let idempotent = Idempotency(isIdempotent: true, method: nil)
    /// Running the call twice may repeat its effect.
    public static let notIdempotent = Idempotency(isIdempotent: false, method: nil)

    /// The methods RFC 9110 (section 9.2.2) defines as idempotent.
    public static let idempotentHTTPMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"]

    /// The header names that mark a request as safe to repeat: the server
    /// deduplicates by its value (the IETF HTTPAPI working group's
    /// `Idempotency-Key` draft, and the `X-Idempotency-Key` spelling some APIs use).
    public static let idempotencyKeyHeaders: Set<String> = ["idempotency-key", "x-idempotency-key"]

    /// The idempotency of an HTTP request with `method` and `headers`.
    ///
    /// Idempotent when the method is (RFC 9110, section 9.2.2), or when the request
    /// carries a non-empty `Idempotency-Key` header, which asks the server to
    /// apply it at most once. A key of spaces and tabs only is empty: HTTP strips a
    /// field value's surrounding whitespace (RFC 9110, section 5.5), so the server sees none.
    ///
    /// The method is compared as it is spelled: methods are case-sensitive (RFC 9110,
    /// section 9.1), so `"get"` is not `GET` but a method of its own, unknown and
    /// therefore not idempotent: nothing says what a server does with it, so nothing
    /// says it is safe to send twice. `URLRequest` spells the methods it knows in capitals itself:
    /// its `httpMethod` reads back `"get"` as `GET` (and `"post"`, `"put"`, `"delete"`,
    /// `"head"`, `"connect"` likewise), so `Idempotency.http(_:)` judges the method the
    /// request sends. It leaves `"options"`, `"trace"` and `"patch"` as spelled
    /// (FoundationNetworking, Swift 6.3), and so does this function.
    public static func http(method: String, headers: [String: String] = [:]) -> Idempotency {
        if Self.idempotentHTTPMethods.contains(method) { return Idempotency(isIdempotent: true, method: method) }
        let hasKey = headers.contains { name, value in
            Self.idempotencyKeyHeaders.contains(name.lowercased()) && value.contains { $0 != " " && $0 != "\t" }
        }
        return Idempotency(isIdempotent: hasKey, method: method)
    }

    /// Not idempotent, derived from a request with `method` that cannot be sent twice
    /// whatever its method says: the `ResilienceURLSession` helpers' reading of a request
    /// whose body is a stream, which the first send reads to its end.
    package static func notIdempotent(method: String) -> Idempotency {
        Idempotency(isIdempotent: false, method: method)
    }

    /// This reading, made stricter by `report` when `report` says the call may not run twice.
    ///
    /// A report never loosens a reading: a call declared not idempotent stays so whatever
    /// the request that failed says of itself.
    func tightened(by report: Idempotency?) -> Idempotency {
        guard self.isIdempotent, let report else { return self }
        return report
    }

    /// `idempotent`, `notIdempotent`, or with the method: `POST (notIdempotent)`.
    public var description: String {
        let word = self.isIdempotent ? "idempotent" : "notIdempotent"
        guard let method = self.method else { return word }
        return "\(method) (\(word))"
    }
}

/// An error that knows whether the request it failed was idempotent.
///
/// ``HTTPResponseError`` adopts it; adopt it for an SDK's own error that records
/// the request, so that a policy wrapped around the SDK's call (which may retry
/// on its own) does not re-send a request the SDK knows was unsafe.
public protocol IdempotencyReporting: Error {
    /// The idempotency of the failed request, or `nil` when unknown.
    var requestIdempotency: Idempotency? { get }
}
