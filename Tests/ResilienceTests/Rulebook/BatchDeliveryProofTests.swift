import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A failure that reports on several items (a CloudKit partial failure's per-item errors) proves its request never left only
/// when every item's error proves it: one item that says nothing of its delivery, or says it may
/// have left, makes the whole failure one that may have been sent.
@Suite(.timeLimit(.minutes(5))) struct BatchDeliveryProofTests {
    /// An item's error as CloudKit would name it: `networkUnavailable`, the device offline.
    static let offline = NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.networkUnavailable.rawValue)

    static func partialFailure(_ items: [String: any Error]) -> NSError {
        NSError(
            domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
            userInfo: [CloudKitErrorCode.partialErrorsKey: items])
    }

    static func wrapped(_ error: any Error, depth: Int) -> any Error {
        var error = error
        for level in 0..<depth {
            error = NSError(domain: "App.Layer\(level)", code: level, userInfo: [NSUnderlyingErrorKey: error])
        }
        return error
    }

    /// A pipeline call declared not idempotent, under a policy: one item of the partial failure
    /// never left (offline), the other's error, a database busy under three levels of the app's
    /// errors, says nothing of its write. The request is not sent again.
    @Test func aPartialFailureWithAnOfflineItemAndASilentItemIsNotSentAgain() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let pipeline = try ResiliencePipeline { try Timeout(.seconds(60), clock: clock) }
        let failure = Self.partialFailure([
            "offline": Self.offline, "busy": Self.wrapped(SQLiteError(code: .busy), depth: 3),
        ])
        let sends = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            try await pipeline.execute(idempotency: .notIdempotent) { () async throws -> Int in
                sends.increment()
                throw failure
            }
        }
        #expect(sends.value == 1, "sent again: \(outcome)")
        let analysis = FailureAnalysis(failure, isCancelled: false, timeLimitFired: false)
        #expect(!analysis.delivery.provesNotSent, "read as \(analysis.delivery)")
    }

    enum ItemKind: CaseIterable {
        case provesNotSent, silent, mayHaveLeft
    }

    /// An item's error of `kind`, under `depth` levels of the app's errors.
    static func item(_ kind: ItemKind, variant: Int, depth: Int) -> any Error {
        let error: any Error
        switch (kind, variant % 2) {
        case (.provesNotSent, 0): error = Self.offline
        case (.provesNotSent, _): error = URLError(.notConnectedToInternet)
        case (.silent, 0): error = SQLiteError(code: .busy)
        case (.silent, _): error = NSError(domain: "App.Store", code: 9)
        case (.mayHaveLeft, 0): error = URLError(.networkConnectionLost)
        case (.mayHaveLeft, _):
            error = NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.networkFailure.rawValue)
        }
        return Self.wrapped(error, depth: depth)
    }

    /// A random batch, possibly holding batches, and whether every item of it proves its request never left.
    static func batch(using generator: inout SeededRandomNumberGenerator, nesting: Int) -> (any Error, Bool) {
        let count = Int.random(in: 1...4, using: &generator)
        var items: [any Error] = []
        var everyItemProves = true
        for _ in 0..<count {
            if nesting < 1, Int.random(in: 0..<5, using: &generator) == 0 {
                let (inner, proves) = Self.batch(using: &generator, nesting: nesting + 1)
                items.append(inner)
                everyItemProves = everyItemProves && proves
            } else {
                let kind = ItemKind.allCases.randomElement(using: &generator)!
                items.append(
                    Self.item(
                        kind, variant: Int.random(in: 0..<2, using: &generator),
                        depth: Int.random(in: 0...2, using: &generator)))
                everyItemProves = everyItemProves && kind == .provesNotSent
            }
        }
        let batch = Self.partialFailure(
            Dictionary(uniqueKeysWithValues: items.enumerated().map { ("item\($0.offset)", $0.element) }))
        return (Self.wrapped(batch, depth: Int.random(in: 0...2, using: &generator)), everyItemProves)
    }

    /// Batches of random shapes: items that prove they never left, say nothing, or may have left,
    /// under wrappers of random depths, batches within batches. A batch reads as never sent
    /// exactly when each of its items does.
    @Test func aBatchProvesItsRequestNeverLeftExactlyWhenEveryItemDoes() {
        let seed = UInt64.random(in: 1...UInt64.max)
        var generator = SeededRandomNumberGenerator(seed: seed)
        for round in 0..<500 {
            let (failure, everyItemProves) = Self.batch(using: &generator, nesting: 0)
            let delivery = FailureAnalysis(failure, isCancelled: false, timeLimitFired: false).delivery
            #expect(
                delivery.provesNotSent == everyItemProves,
                "seed \(seed), round \(round): \(failure) read as \(delivery)")
            if delivery.provesNotSent != everyItemProves { return }
        }
    }
}
