import Foundation

@testable import Resilience

/// Fuzzes the retry engine's arithmetic and validation with settings built from the input.
///
/// Invariants, checked on every input:
/// - a policy accepts exactly the settings an independent statement of the rules
///   accepts, and a rejection's message names the setting, what is accepted and the value;
/// - every backoff delay, valid configuration or not, is in `0...Duration.resilienceMaximum`,
///   and for a valid one it is within the configured maximum and never shrinks as attempts grow;
/// - every jitter range is ordered and in bounds, and every jittered delay falls inside its range;
/// - a budget accepts exactly the documented ranges, and under any sequence of
///   successes and failures its tokens follow the gRPC rules and stay in `0...maximumTokens`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRetrySchedule(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    switch input.choice(3) {
    case 0: checkBudget(&input)
    default: checkSchedule(&input)
    }
    return 0
}

private func checkSchedule(_ input: inout FuzzInput) {
    let (backoff, backoffIsValid) = makeBackoff(&input)
    let (jitter, jitterIsValid) = makeJitter(&input)
    let attempts = input.int()
    let deadline: Duration? = input.bool() ? input.duration() : nil
    let maximumRetryAfter = input.duration()

    let expectedValid =
        attempts >= 1 && backoffIsValid && jitterIsValid && (deadline.map { $0 > .zero } ?? true)
        && maximumRetryAfter >= .zero
    do {
        let policy = try RetryPolicy(
            maximumAttempts: attempts, backoff: backoff, jitter: jitter, deadline: deadline,
            maximumRetryAfter: maximumRetryAfter)
        require(
            expectedValid,
            "accepted \(attempts) \(backoff) \(jitter) \(String(describing: deadline)) \(maximumRetryAfter)")
        if let stored = policy.deadline {
            require(stored > .zero && stored <= .resilienceMaximum, "deadline stored as \(stored)")
        }
        require(
            policy.maximumRetryAfter <= .resilienceMaximum, "maximumRetryAfter stored as \(policy.maximumRetryAfter)")
    } catch {
        require(!expectedValid, "rejected valid settings: \(error)")
        let message = error.description
        require(message.hasPrefix("\(error.setting) must be \(error.accepted), got \(error.value)"), message)
        require(!error.setting.isEmpty && !error.accepted.isEmpty, message)
    }

    var generator = SplitMix(state: input.uint64())
    var previousDelay = Duration.zero
    var previousJittered: Duration?
    let probes = [0, 1, 2, 62, 63, 64, 1_000, 10_000, .max - 1, .max, -1, .min] + (0..<4).map { _ in input.int() }
    for attempt in probes.sorted() {
        let delay = backoff.delay(forAttempt: attempt)
        require(delay >= .zero && delay <= .resilienceMaximum, "\(backoff) at \(attempt) gave \(delay)")
        if backoffIsValid {
            require(delay <= backoff.maximum, "\(backoff) at \(attempt) gave \(delay), above its maximum")
            require(delay >= previousDelay, "\(backoff) shrank to \(delay) at \(attempt)")
            previousDelay = delay
        }
        let range = jitter.range(for: backoff, attempt: attempt)
        require(range.lowerBound >= .zero && range.upperBound <= .resilienceMaximum, "\(jitter) range \(range)")
        let jittered = jitter.delay(for: backoff, attempt: attempt, previous: previousJittered, using: &generator)
        require(range.contains(jittered), "\(jitter) over \(backoff) at \(attempt) gave \(jittered) outside \(range)")
        previousJittered = input.bool() ? jittered : input.duration()
    }

    var delays = RetryDelays(backoff: backoff, jitter: jitter, generator: generator)
    for _ in 0..<input.choice(8) {
        let delay = delays.next() ?? .zero
        require(delay >= .zero && delay <= .resilienceMaximum, "preview gave \(delay)")
    }
}

private func makeBackoff(_ input: inout FuzzInput) -> (Backoff, isValid: Bool) {
    switch input.choice(3) {
    case 0:
        let delay = input.duration()
        return (.constant(delay), delay >= .zero)
    case 1:
        let (initial, increment, maximum) = (input.duration(), input.duration(), input.duration())
        let isValid = initial >= .zero && increment >= .zero && maximum >= initial
        return (.linear(initial: initial, increment: increment, maximum: maximum), isValid)
    default:
        let (initial, multiplier, maximum) = (input.duration(), input.double(), input.duration())
        let isValid = initial > .zero && multiplier.isFinite && multiplier >= 1 && maximum >= initial
        return (.exponential(initial: initial, multiplier: multiplier, maximum: maximum), isValid)
    }
}

private func makeJitter(_ input: inout FuzzInput) -> (Jitter, isValid: Bool) {
    switch input.choice(5) {
    case 0: return (.none, true)
    case 1: return (.full, true)
    case 2: return (.equal, true)
    case 3: return (.decorrelated, true)
    default:
        let ratio = input.double()
        return (.proportional(ratio), ratio >= 0 && ratio <= 1)
    }
}

private func checkBudget(_ input: inout FuzzInput) {
    let maximumTokens = input.double()
    let tokenRatio = input.double()
    let expectedValid =
        maximumTokens >= 1 && maximumTokens <= 1_000_000 && tokenRatio >= 0.001 && tokenRatio <= maximumTokens
    let budget: RetryBudget
    do {
        budget = try RetryBudget(maximumTokens: maximumTokens, tokenRatio: tokenRatio)
        require(expectedValid, "accepted maximumTokens \(maximumTokens), tokenRatio \(tokenRatio)")
    } catch {
        require(!expectedValid, "rejected maximumTokens \(maximumTokens), tokenRatio \(tokenRatio): \(error)")
        require(error.setting == "maximumTokens" || error.setting == "tokenRatio", "\(error)")
        return
    }
    // The gRPC A6 rules in thousandths of a token, stated independently of the
    // implementation: the capacity is the largest whole number of thousandths
    // not above maximumTokens, the refund tokenRatio to the nearest thousandth.
    var maximum = Int((maximumTokens * 1_000).rounded(.up))
    while Double(maximum) / 1_000 > maximumTokens { maximum -= 1 }
    let refund = Int((tokenRatio * 1_000).rounded())
    var expected = maximum
    while !input.isEmpty {
        if input.bool() {
            budget.recordSuccess()
            expected = Swift.min(maximum, expected + refund)
        } else {
            budget.recordFailure()
            expected = Swift.max(0, expected - 1_000)
        }
        let tokens = budget.tokens
        require(tokens >= 0 && tokens <= maximumTokens, "tokens \(tokens) outside 0...\(maximumTokens)")
        require(tokens == Double(expected) / 1_000, "tokens \(tokens), expected \(Double(expected) / 1_000)")
        require(budget.allowsRetry == (expected * 2 > maximum), "allowsRetry \(budget.allowsRetry) at \(tokens)")
    }
}

/// SplitMix64, so a jittered schedule is a function of the input.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
