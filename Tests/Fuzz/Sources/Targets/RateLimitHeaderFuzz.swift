import Foundation

@testable import Resilience

/// Fuzzes the RateLimit and RateLimit-Policy parsers (RFC 9651 Lists) with arbitrary bytes.
///
/// Invariants, checked on every input:
/// - the raw-bytes and `String` views agree whenever the input is valid UTF-8;
/// - every accepted limit has `remaining >= 0` and a reset in `0...` at most 15 digits of seconds;
/// - every accepted policy has `quota >= 0` and a window in the same range;
/// - an accepted field re-serialized from what was parsed parses again to the same values;
/// - the hint (`exhaustedFor`) is `nil` or one of the accepted resets of an exhausted limit,
///   clamped to the package's range as every hint is;
/// - a `RateLimitGate` fed the field never asks for a wait beyond its maximum.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRateLimitHeader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = Array(UnsafeBufferPointer(start: data, count: size))
    let limits = RateLimitHeader.serviceLimits(utf8: raw)
    let policies = RateLimitHeader.policies(utf8: raw)
    if let text = String(validating: raw, as: UTF8.self) {
        require(RateLimitHeader.serviceLimits(parsing: text) == limits, "bytes and string disagree on limits")
        require(RateLimitHeader.policies(parsing: text) == policies, "bytes and string disagree on policies")
    }
    let largest = Duration.seconds(999_999_999_999_999)
    if let limits {
        for limit in limits {
            require(limit.remaining >= 0, "negative remaining \(limit.remaining)")
            if let reset = limit.reset { require(reset >= .zero && reset <= largest, "reset \(reset) out of range") }
        }
        if !limits.isEmpty {
            let again = RateLimitHeader.serviceLimits(parsing: limits.map(serialized).joined(separator: ", "))
            require(again == limits, "re-serialized limits parse differently: \(String(describing: again))")
        }
        if let hint = RateLimitHeader.exhaustedFor(limits) {
            require(
                limits.contains { $0.remaining == 0 && $0.reset?.clampedToResilienceRange == hint },
                "hint \(hint) is no exhausted reset")
        }
        let gate = try! RateLimitGate(maximumWait: .seconds(60), clock: ContinuousClock())
        gate.record(limits)
        let wait = gate.reserve()
        require(wait >= .zero && wait <= .seconds(60), "gate wait \(wait) out of range")
    }
    if let policies {
        for policy in policies {
            require(policy.quota >= 0, "negative quota \(policy.quota)")
            if let window = policy.window { require(window >= .zero && window <= largest, "window out of range") }
        }
    }
    return 0
}

/// A limit as an RFC 9651 List member.
private func serialized(_ limit: RateLimitHeader.ServiceLimit) -> String {
    let escaped = limit.policy.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    var text = "\"\(escaped)\";r=\(limit.remaining)"
    if let reset = limit.reset { text += ";t=\(reset.components.seconds)" }
    if let key = limit.partitionKey { text += ";pk=:\(key):" }
    return text
}
