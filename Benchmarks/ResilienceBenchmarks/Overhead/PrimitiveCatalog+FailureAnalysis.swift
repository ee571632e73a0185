import Foundation
import Resilience

extension PrimitiveCatalog {
    /// What reading one failure costs: `FailureAnalysis(error)`, which every retry, every
    /// failure a breaker records and every classifier's reading goes through, for the shapes
    /// of failure an app meets most. Measured, never asserted; the success paths do not read
    /// failures at all.
    static let failureAnalysis: [PrimitiveBenchmark] = [
        Self.analysis("analysis.url-error", "FailureAnalysis of URLError(.timedOut)") {
            URLError(.timedOut)
        },
        Self.analysis(
            "analysis.nserror-underlying", "FailureAnalysis of an NSError: underlying URLError, description"
        ) {
            NSError(
                domain: "com.example.sync", code: 7,
                userInfo: [
                    NSUnderlyingErrorKey: URLError(.networkConnectionLost),
                    NSLocalizedDescriptionKey: "The sync failed.",
                ])
        },
        Self.analysis("analysis.app-enum", "FailureAnalysis of an app's enum case holding a URLError") {
            AppFailure.transport(URLError(.cannotConnectToHost))
        },
        Self.analysis("analysis.http-response-error", "FailureAnalysis of an HTTPResponseError, 503, Retry-After") {
            HTTPResponseError(
                statusCode: 503, headers: ["Retry-After": "5", "Content-Type": "application/json"],
                body: Data(#"{"error":"unavailable"}"#.utf8), url: URL(string: "https://api.example.com/items"))
        },
    ]

    /// A row that reads the error `make` builds, once per operation; the facts read are folded
    /// into a value the optimizer must keep.
    private static func analysis(_ name: String, _ detail: String, _ make: () -> any Error) -> PrimitiveBenchmark {
        let error = make()
        return PrimitiveBenchmark(name: name, detail: detail) { iterations in
            time {
                var folded = 0
                for _ in 0..<iterations {
                    let analysis = FailureAnalysis(error)
                    folded &+= (analysis.httpStatus ?? 1) &+ (analysis.delivery == .notSent ? 2 : 0)
                }
                blackHole(folded)
            }
        }
    }
}

/// An app's error that keeps the URL loading error it failed with, without saying so through
/// `UnderlyingErrorProviding`: the rules find it by reflection.
enum AppFailure: Error {
    case transport(URLError)
    case decoding(String)
}
