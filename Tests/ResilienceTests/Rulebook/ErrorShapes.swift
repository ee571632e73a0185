import Foundation
import Resilience
import ResilienceTesting

/// An app's own wrapper that says what it wraps.
enum DeclaredAppError: Error, UnderlyingErrorProviding {
    case transport(any Error)

    var underlyingErrors: [any Error] {
        switch self {
        case .transport(let error): [error]
        }
    }
}

/// An app's own wrapper that says nothing: the library finds the error by reflection.
enum SilentAppError: Error {
    case transport(any Error)
    case server(code: Int, cause: any Error)
}

/// A struct wrapper that keeps its cause in an optional property.
struct ContextError: Error {
    var operation: String
    var cause: (any Error)?
}

/// The ways real code wraps an error, one level each.
enum ErrorShape: CaseIterable, Sendable, CustomStringConvertible {
    case nsUnderlying
    case nsMultipleUnderlying
    case restService
    case declaredWrapper
    case silentEnum
    case silentEnumWithPayload
    case contextStruct
    case cloudKitPartialFailureItem
    case sqliteRollback

    func wrap(_ error: any Error) -> any Error {
        switch self {
        case .nsUnderlying:
            return NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])
        case .nsMultipleUnderlying:
            return NSError(
                domain: "App", code: 2, userInfo: ["NSMultipleUnderlyingErrorsKey": [TransientError(), error]])
        case .restService:
            return RESTServiceError(sdkCode: 9, underlying: error)
        case .declaredWrapper:
            return DeclaredAppError.transport(error)
        case .silentEnum:
            return SilentAppError.transport(error)
        case .silentEnumWithPayload:
            return SilentAppError.server(code: 7, cause: error)
        case .contextStruct:
            return ContextError(operation: "sync", cause: error)
        case .cloudKitPartialFailureItem:
            return NSError(
                domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                userInfo: [CloudKitErrorCode.partialErrorsKey: ["record-1": error]])
        case .sqliteRollback:
            return SQLiteRollbackError(transactionError: error, rollbackError: SQLiteError(code: 1))
        }
    }

    var description: String { String(describing: Self.self) + "." + "\(self.name)" }

    private var name: String {
        switch self {
        case .nsUnderlying: "nsUnderlying"
        case .nsMultipleUnderlying: "nsMultipleUnderlying"
        case .restService: "restService"
        case .declaredWrapper: "declaredWrapper"
        case .silentEnum: "silentEnum"
        case .silentEnumWithPayload: "silentEnumWithPayload"
        case .contextStruct: "contextStruct"
        case .cloudKitPartialFailureItem: "cloudKitPartialFailureItem"
        case .sqliteRollback: "sqliteRollback"
        }
    }

    /// `depth` shapes drawn from `generator`, innermost first.
    static func draw(depth: Int, using generator: inout SeededRandomNumberGenerator) -> [ErrorShape] {
        (0..<depth).map { _ in Self.allCases.randomElement(using: &generator)! }
    }

    /// `error` wrapped in each of `shapes`, innermost first.
    static func wrap(_ error: any Error, in shapes: [ErrorShape]) -> any Error {
        shapes.reduce(error) { wrapped, shape in shape.wrap(wrapped) }
    }
}

/// The shapes a 429 arrives in, each with a seven-second hint.
enum TooManyRequestsShape: CaseIterable, Sendable {
    case httpResponse
    case nsErrorStatusKey
    case restService
    case userStatusType

    static let hint: Duration = .seconds(7)

    var error: any Error {
        switch self {
        case .httpResponse:
            HTTPResponseError(statusCode: 429, headers: ["retry-after": "7"])
        case .nsErrorStatusKey:
            NSError(domain: "SDK", code: 1, userInfo: ["statusCode": 429, "Retry-After": "7"])
        case .restService:
            RESTServiceError(sdkCode: 503, httpStatus: 429, retryAfter: Self.hint)
        case .userStatusType:
            StatusError(status: 429, hint: Self.hint)
        }
    }
}

/// The shapes of a POST that timed out, or otherwise may have reached the server.
enum TimedOutPOSTShape: CaseIterable, Sendable {
    case attemptTimeout
    case urlErrorFromTheHTTPHelper
    case gatewayUnavailable

    var error: any Error {
        let post = Idempotency.http(method: "POST")
        switch self {
        case .attemptTimeout:
            return AttemptTimeoutError(timeout: .seconds(2), requestIdempotency: post)
        case .urlErrorFromTheHTTPHelper:
            return URLError(.timedOut, userInfo: [ErrorHints.requestIdempotencyKey: post])
        case .gatewayUnavailable:
            return HTTPResponseError(statusCode: 503, requestIdempotency: post)
        }
    }
}

/// Every classifier the library ships, and one that retries everything.
enum ClassifierUnderTest: CaseIterable {
    case `default`
    case http
    case httpForGET
    case cloudKitIdempotent
    case restService
    case sqlite
    case chain
    case retryEverything

    var classifier: any RetryClassifier {
        switch self {
        case .default: DefaultRetryClassifier()
        case .http: HTTPRetryClassifier()
        case .httpForGET: HTTPRetryClassifier(method: "GET")
        case .cloudKitIdempotent: CloudKitRetryClassifier(operationIsIdempotent: true)
        case .restService: RESTServiceErrorClassifier()
        case .sqlite: SQLiteRetryClassifier()
        case .chain: SQLiteRetryClassifier().fallingBack(to: HTTPRetryClassifier(method: "PUT"))
        case .retryEverything: ClosureRetryClassifier { _, _ in .retry }
        }
    }
}
