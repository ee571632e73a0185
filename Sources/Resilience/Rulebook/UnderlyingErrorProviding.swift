/// An error that wraps other errors, and says which.
///
/// The library reads the facts that decide a retry (an HTTP status, a server's
/// retry-after hint, whether the request left the device) anywhere in an
/// error's chain: `NSUnderlyingErrorKey`, the library's own wrappers, CloudKit's
/// per-item errors, and errors that adopt this protocol. Adopt it for an app's
/// own wrapper so that, for instance, an HTTP 429 wrapped in it is still never
/// retried:
///
/// ```swift
/// enum AppError: Error, UnderlyingErrorProviding {
///     case transport(any Error)
///     case decoding(String)
///
///     var underlyingErrors: [any Error] {
///         if case .transport(let error) = self { return [error] }
///         return []
///     }
/// }
/// ```
///
/// An error that does not adopt it is still looked into by reflection, a few
/// levels deep, so a wrapper that stores an `any Error` is understood without
/// it; adopting the protocol makes the answer exact and cheaper.
public protocol UnderlyingErrorProviding: Error {
    /// The errors this one wraps, most relevant first; empty for none.
    var underlyingErrors: [any Error] { get }
}
