import Foundation
import Resilience

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSession {
    /// Sends `request` once for one of the HTTP helpers, as `data(for:)` does, and on failure
    /// throws its `URLError` with what the helper knows of the request: its idempotency
    /// (`ErrorHints.requestIdempotencyKey`), and, when the session followed a redirect
    /// before the failure, that the request may have been sent
    /// (`ErrorHints.requestDeliveryKey`).
    ///
    /// A redirect is an answer: the server that sent it received the request and may have
    /// acted on it, as Post/Redirect/Get does by design. A failure after it cannot prove the
    /// request had no effect, even one whose code says no connection was made (that was the
    /// connection to the redirect's target), so a request that is not idempotent must not be
    /// sent again.
    ///
    /// An answer after a redirect is the redirect target's, so it says nothing of the request
    /// either: the load returns whether the session followed one (`followedRedirect`), and the
    /// helper records `RequestDelivery.mayHaveBeenSent` in the `HTTPResponseError` it throws
    /// for an unacceptable status (`HTTPResponseError.recordedDelivery`). So a `POST` whose
    /// redirect's target answers 401 is not refreshed and sent again.
    ///
    /// The task itself tells of the redirect: its `currentRequest` becomes the request it
    /// sent to the new location. The error cannot (on Linux its failing URL is still the
    /// original one), nor can a per-task delegate, whose redirect method FoundationNetworking
    /// does not call (Swift 6.3). The session's own delegate still decides whether a redirect
    /// is followed, as it does for `data(for:)`.
    func helperData(
        for request: URLRequest, idempotency: Idempotency
    ) async throws -> (data: Data, response: URLResponse, followedRedirect: Bool) {
        let load = Lock(HelperLoad())
        do {
            let loaded: (Data, URLResponse) = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let task = self.dataTask(with: request) { data, response, error in
                        if let error {
                            continuation.resume(throwing: error)
                        } else if let response {
                            continuation.resume(returning: (data ?? Data(), response))
                        } else {
                            continuation.resume(throwing: URLError(.badServerResponse))
                        }
                    }
                    let cancelled = load.withLock { load in
                        load.task = task
                        return load.isCancelled
                    }
                    if cancelled { task.cancel() }
                    task.resume()
                }
            } onCancel: {
                let task = load.withLock { load in
                    load.isCancelled = true
                    return load.task
                }
                task?.cancel()
            }
            let task = load.withLock { $0.task }
            return (loaded.0, loaded.1, task.map(Self.followedARedirect) ?? false)
        } catch let error as URLError {
            let task = load.withLock { $0.task }
            let redirected = task.map(Self.followedARedirect) ?? false
            throw RetryPolicy.annotated(error, idempotency: idempotency, redirected: redirected)
        }
    }

    /// Whether `task` went on to a new location: its current request is not the original one.
    ///
    /// A redirect to the very same URL and method (a 307 to itself) is not seen; where the
    /// system rewrites the current request's URL without a redirect, the answer errs towards
    /// "may have been sent", which only keeps a request that is not idempotent from being
    /// sent again after a refused connection or refreshed and sent again after a 401.
    static func followedARedirect(_ task: URLSessionTask) -> Bool {
        guard let original = task.originalRequest, let current = task.currentRequest else { return false }
        return current.url != original.url || current.httpMethod != original.httpMethod
    }
}

/// The task one helper load runs, and whether the caller cancelled the load before it existed.
private struct HelperLoad {
    var task: URLSessionDataTask?
    var isCancelled = false
}
