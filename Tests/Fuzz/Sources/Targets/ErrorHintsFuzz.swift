import Foundation

@testable import Resilience

/// Fuzzes the hint extractors with errors built from the input.
///
/// The input describes a tree of errors: `NSError`s whose `userInfo` holds
/// numbers of every type the extractors read (NaN, infinities, negatives, huge
/// values), strings, durations, dates, `NSNull`, arrays and underlying errors
/// nested well past the depth the extractors look; and Swift errors that report
/// a status or a hint themselves. Invariants, checked on every input:
/// - a status is in `100...599`; a 429 on top means `isTooManyRequests`, and the
///   whole-chain `FailureAnalysis` agrees with `ErrorHints` and the rules stop every 429;
/// - a retry-after hint is in `0...Duration.resilienceMaximum`;
/// - the default classifier always has an opinion;
/// - a CloudKit hint given as a plain number is that many seconds, clamped, or ignored when negative or not finite.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzErrorHints(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    if input.choice(4) == 0 {
        checkCloudKitNumber(&input)
        return 0
    }
    let error = makeError(&input, depth: 0)
    check(error)
    return 0
}

private func check(_ error: any Error) {
    let status = ErrorHints.httpStatus(of: error)
    if let status {
        require((100...599).contains(status), "status \(status)")
    }
    // The outermost status may differ from a 429 deeper in the chain, never the other way round.
    if status == 429 {
        require(ErrorHints.isTooManyRequests(error), "a 429 on top but isTooManyRequests is false")
    }
    let analysis = FailureAnalysis(error)
    require(analysis.httpStatus == status, "the analysis and ErrorHints disagree on the status")
    require(analysis.isTooManyRequests == ErrorHints.isTooManyRequests(error), "the analysis disagrees on 429")
    require(analysis.retryAfter == ErrorHints.retryAfter(of: error), "the analysis disagrees on the hint")
    if analysis.isTooManyRequests {
        // Cancellation, when the chain also holds one, is the only rule that comes first.
        let reason = Rulebook.stopReason(for: analysis, idempotency: .idempotent)
        require(
            reason == .tooManyRequests || (reason == .cancelled && analysis.interruption == .caller),
            "a 429 in the chain is not stopped by the rules")
    }
    if let hint = ErrorHints.retryAfter(of: error) {
        require(hint >= .zero && hint <= .resilienceMaximum, "hint \(hint)")
    }
    let decision = DefaultRetryClassifier().decision(for: error, context: RetryContext(attempt: 1))
    require(decision != nil, "the default classifier had no opinion")
}

/// One `NSError` whose CloudKit hint is a plain number, against what it must give.
private func checkCloudKitNumber(_ input: inout FuzzInput) {
    let seconds = input.double()
    let value: Any
    let asDouble: Double
    switch input.choice(4) {
    case 0:
        value = seconds
        asDouble = seconds
    case 1:
        value = NSNumber(value: seconds)
        asDouble = seconds
    case 2:
        let integer = input.int()
        value = integer
        asDouble = Double(integer)
    default:
        let float = Float(seconds)
        value = float
        asDouble = Double(float)
    }
    let error = NSError(domain: "CKErrorDomain", code: 7, userInfo: [ErrorHints.cloudKitRetryAfterKey: value])
    let expected: Duration? = asDouble.isFinite && asDouble >= 0 ? .clampedSeconds(asDouble) : nil
    let hint = ErrorHints.retryAfter(of: error)
    require(
        hint == expected,
        "CKRetryAfter \(value) gave \(String(describing: hint)), expected \(String(describing: expected))")
    check(error)
}

private let userInfoKeys: [String] =
    ErrorHints.httpStatusKeys + [ErrorHints.cloudKitRetryAfterKey, NSUnderlyingErrorKey, NSLocalizedDescriptionKey, ""]

private func makeError(_ input: inout FuzzInput, depth: Int) -> any Error {
    switch input.choice(8) {
    case 0:
        return ReportingError(
            httpStatusCode: input.bool() ? input.int() : nil, retryAfter: input.bool() ? input.duration() : nil)
    case 1:
        return StatusOnlyError(httpStatusCode: input.bool() ? input.int() : nil)
    case 2:
        return CancellationError()
    case 3 where depth < 40:
        // A long chain of underlying errors, far deeper than the extractors follow.
        var error: any Error = makeError(&input, depth: depth + 1)
        for _ in 0..<input.choice(64) {
            error = NSError(domain: "chain", code: 0, userInfo: [NSUnderlyingErrorKey: error])
        }
        return error
    default:
        var userInfo: [String: Any] = [:]
        for _ in 0..<input.choice(6) {
            let key = input.bool() ? userInfoKeys[input.choice(userInfoKeys.count)] : input.string(maximumLength: 12)
            userInfo[key] = makeValue(&input, depth: depth)
        }
        return NSError(domain: input.string(maximumLength: 8), code: input.int(), userInfo: userInfo)
    }
}

private func makeValue(_ input: inout FuzzInput, depth: Int) -> Any {
    switch input.choice(16) {
    case 0: return input.double()
    case 1: return input.int()
    case 2: return input.int64()
    case 3: return Int32(truncatingIfNeeded: input.int())
    case 4: return UInt(truncatingIfNeeded: input.int())
    case 5: return Float(input.double())
    case 6: return NSNumber(value: input.double())
    case 7: return NSNumber(value: input.int64())
    case 8: return NSNumber(value: input.bool())
    case 9, 10: return input.string()
    case 11: return input.duration()
    case 12 where depth < 40: return makeError(&input, depth: depth + 1)
    case 13: return NSNull()
    case 14 where depth < 40: return (0..<input.choice(3)).map { _ in makeValue(&input, depth: depth + 1) }
    default: return Date(timeIntervalSince1970: input.double())
    }
}

private struct ReportingError: HTTPStatusReporting, RetryAfterProviding {
    var httpStatusCode: Int?
    var retryAfter: Duration?
}

private struct StatusOnlyError: HTTPStatusReporting {
    var httpStatusCode: Int?
}
