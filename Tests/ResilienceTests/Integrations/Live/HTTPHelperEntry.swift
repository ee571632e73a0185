import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The ways of sending a request through the package's HTTP helpers that a live test
/// compares, each allowing three attempts.
enum HTTPHelperEntry: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `RetryPolicy.data(for:session:)`, with no wait between attempts.
    case policy
    /// `RetryPolicy.data(for:session:sending:)`, with no wait between attempts.
    case policySendingHeaders
    /// `ResiliencePipeline.data(for:session:)` around a policy with no wait between attempts.
    case pipeline
    /// The `standardHTTP` preset, its jittered backoff on a test clock the test moves along.
    case standardPreset

    var testDescription: String { self.rawValue }

    /// Sends `request` through this entry and returns the body of the answer it accepts.
    func send(_ request: URLRequest, session: URLSession) async throws -> Data {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        switch self {
        case .policy:
            return try await policy.data(for: request, session: session).data
        case .policySendingHeaders:
            let headers = RetryRequestHeaders(attempt: "X-Retry-Attempt")
            return try await policy.data(for: request, session: session, sending: headers).data
        case .pipeline:
            return try await ResiliencePipeline { policy }.data(for: request, session: session).data
        case .standardPreset:
            let clock = TestClock()
            let pipeline = try ResiliencePipeline.standardHTTP(
                totalTimeout: .seconds(3_000), maximumAttempts: 3, attemptTimeout: .seconds(1_000), clock: clock)
            let call = Task { try await pipeline.data(for: request, session: session).data }
            // The clock moves to the end of each backoff as soon as the call sleeps it, never
            // to a time limit's end (1,000 seconds and more away): it stands still while a request runs.
            let mover = Task {
                while await clock.advanceToNextDeadline(within: .seconds(100)) != nil {}
            }
            defer { mover.cancel() }
            return try await call.value
        }
    }

    /// The error `body` throws, or `nil` when it returns.
    static func error(of body: () async throws -> Data) async -> (any Error)? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }
}
