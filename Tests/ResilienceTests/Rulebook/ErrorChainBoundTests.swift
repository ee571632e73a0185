import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A node of an app's object graph, linked both ways, that may hold a failure.
class GraphNode {
    var next: GraphNode?
    var previous: GraphNode?
    var failure: (any Error)?
    var weights: [Int] = Array(repeating: 1, count: 64)
}

/// A node whose failure is kept by its superclass.
final class TaggedGraphNode: GraphNode {
    var tag = "tagged"
}

/// An error that keeps a reference into an app's object graph.
struct GraphFailure: Error {
    // The graph is built before the error is thrown and never changed after.
    nonisolated(unsafe) var root: GraphNode
}

/// Two class-instance errors that name each other.
final class LoopingFailure: Error {
    // Set once, right after both errors exist, before either is thrown.
    nonisolated(unsafe) var partner: (any Error)?
    let cause: (any Error)?

    init(cause: (any Error)?) { self.cause = cause }
}

/// A class-instance error wrapping the next one.
final class ChainedFailure: Error {
    let next: any Error

    init(next: any Error) { self.next = next }
}

/// Nested values, as deep as a hostile input likes.
indirect enum Nesting: Sendable {
    case leaf(any Error)
    case nested(Nesting)
}

/// A user's error holding whatever it is given.
enum HoldingFailure: Error {
    case holding(context: [any Sendable], failures: [any Error])
    case nesting(Nesting)
}

/// A record's state: an enum without payloads, which a proof cannot rule out for its whole type.
enum RecordState: Sendable { case synced, pending }

/// Records nested five deep, eight stored values a level, whose leaves are ``RecordState``s.
struct RecordPart: Sendable {
    var a = RecordState.synced, b = RecordState.synced, c = RecordState.synced, d = RecordState.synced
    var e = RecordState.synced, f = RecordState.synced, g = RecordState.synced, h = RecordState.synced
}
/// The fourth level of ``DeepRecord``.
struct RecordSection: Sendable {
    var a = RecordPart(), b = RecordPart(), c = RecordPart(), d = RecordPart()
    var e = RecordPart(), f = RecordPart(), g = RecordPart(), h = RecordPart()
}
/// The third level of ``DeepRecord``.
struct RecordChapter: Sendable {
    var a = RecordSection(), b = RecordSection(), c = RecordSection(), d = RecordSection()
    var e = RecordSection(), f = RecordSection(), g = RecordSection(), h = RecordSection()
}
/// The second level of ``DeepRecord``.
struct RecordVolume: Sendable {
    var a = RecordChapter(), b = RecordChapter(), c = RecordChapter(), d = RecordChapter()
    var e = RecordChapter(), f = RecordChapter(), g = RecordChapter(), h = RecordChapter()
}
/// A record of an app's, five levels of eight stored values.
struct DeepRecord: Sendable {
    var a = RecordVolume(), b = RecordVolume(), c = RecordVolume(), d = RecordVolume()
    var e = RecordVolume(), f = RecordVolume(), g = RecordVolume(), h = RecordVolume()
}

/// Hostile shapes cost the walk a fixed amount, however large or cyclic.
@Suite("The error chain's walk stays bounded for hostile shapes")
struct ErrorChainBoundTests {
    /// Walks `error`; returns the errors visited and the reflection spent.
    static func walk(_ error: any Error) -> (visited: Int, spent: Int) {
        var visited = 0
        let spent = ErrorChain.walk(error) { _ in
            visited += 1
            return true
        }
        return (visited, spent)
    }

    /// `count` nodes in a ring linked both ways; the last one holds `failure`.
    static func ring(of count: Int, lastHolding failure: any Error) -> [GraphNode] {
        let nodes = (0..<count).map { $0 == count - 1 ? TaggedGraphNode() : GraphNode() }
        for index in nodes.indices {
            nodes[index].next = nodes[(index + 1) % count]
            nodes[index].previous = nodes[(index + count - 1) % count]
        }
        nodes[count - 1].failure = failure
        return nodes
    }

    @Test func aRingOfObjectsLinkedBothWaysIsLookedIntoOnceEach() {
        let nodes = Self.ring(of: 5, lastHolding: HTTPResponseError(statusCode: 429))
        defer {
            for node in nodes {
                node.next = nil
                node.previous = nil
            }
        }
        let failure = GraphFailure(root: nodes[0])
        let (visited, spent) = Self.walk(failure)
        #expect(FailureAnalysis(failure).isTooManyRequests, "the failure is kept by the last node's superclass")
        #expect(visited == 2)
        #expect(spent == 1 + nodes.count + 1, "the error, each node once, and the response below the last")
    }

    @Test func classInstanceErrorsThatNameEachOtherAreVisitedOnceEach() {
        let first = LoopingFailure(cause: nil)
        let second = LoopingFailure(cause: StatusError(status: 429, hint: .seconds(3)))
        first.partner = second
        second.partner = first
        defer { first.partner = nil }
        let analysis = FailureAnalysis(first)
        #expect(analysis.isTooManyRequests)
        #expect(analysis.retryAfter == .seconds(3))
        #expect(Self.walk(first).visited == 3, "first, second and its cause; first is not visited again")
    }

    @Test func aLongChainOfClassInstanceErrorsStopsAtTheWalksDepth() {
        var error: any Error = HTTPResponseError(statusCode: 429)
        for _ in 0..<2_000 { error = ChainedFailure(next: error) }
        let (visited, spent) = Self.walk(error)
        #expect(visited == ErrorChain.maximumDepth + 1)
        #expect(spent <= ErrorChain.maximumDepth)
        #expect(!FailureAnalysis(error).isTooManyRequests, "two thousand levels down is past the bound")
    }

    @Test func deeplyNestedValuesStopAtTheReflectionDepth() {
        var nesting = Nesting.leaf(HTTPResponseError(statusCode: 429))
        for _ in 0..<2_000 { nesting = .nested(nesting) }
        let (visited, spent) = Self.walk(HoldingFailure.nesting(nesting))
        #expect(visited == 1)
        #expect(spent <= ErrorChain.maximumReflectionDepth)
    }

    @Test func aHugeCollectionOfErrorsCostsTheWalkItsBoundsAndNoMore() {
        let failures = (0..<200_000).map { TransientError(id: $0) as any Error }
        let (visited, spent) = Self.walk(HoldingFailure.holding(context: [], failures: failures))
        #expect(visited <= ErrorChain.maximumErrors)
        #expect(visited > 1_000, "as many as the budget pays for")
        #expect(spent <= ErrorChain.maximumReflectedValues)
        let listed = NSError(domain: "x", code: 1, userInfo: [ErrorChain.multipleUnderlyingErrorsKey: failures])
        #expect(Self.walk(listed).visited == ErrorChain.maximumErrors)
    }

    @Test func aHugeContextOfValuesDoesNotHideTheFailuresAfterIt() {
        let context = (0..<200_000).map { $0 as any Sendable }
        let failures = (0..<300).map { TransientError(id: $0) as any Error } + [HTTPResponseError(statusCode: 429)]
        let error = HoldingFailure.holding(context: context, failures: failures)
        let (_, spent) = Self.walk(error)
        #expect(spent <= ErrorChain.maximumReflectedValues)
        #expect(
            FailureAnalysis(error).isTooManyRequests, "the context gets half of what is left, the failures the rest")
    }

    @Test func payloadsOfErrorFreeTypesCostNothing() {
        #expect(ErrorChain.Reflection.mirrorKeepsDeclaredTypes, "the proofs need the declared types")
        let records = BuriedShapes.records(5_000)
        let error = SyncFailure.records(succeeded: records, failed: [HTTPResponseError(statusCode: 429)])
        let (visited, spent) = Self.walk(error)
        #expect(visited == 2)
        #expect(
            spent <= 5, "the error, its payload, the list of failures, its one element and the response; not one record"
        )
        let identifiers = SyncFailure.identifiers(succeeded: (0..<5_000).map { "\($0)" }, failed: [])
        #expect(Self.walk(identifiers).spent <= 3)
    }

    @Test func collectionsOfAnAppsStructuresOfErrorFreeValuesCostNothing() {
        struct Page {
            var records: [SyncedRecord]
            var cursor: String?
        }
        struct PagesFailure: Error {
            var pages: [Page]
            var byCursor: [String: Page]
            var failed: [any Error]
        }
        let page = Page(records: BuriedShapes.records(20), cursor: "next")
        let error = PagesFailure(
            pages: Array(repeating: page, count: 2_000), byCursor: ["a": page, "b": page],
            failed: [HTTPResponseError(statusCode: 429)])
        let (visited, spent) = Self.walk(error)
        #expect(visited == 2)
        #expect(spent <= 4, "the error, its failures, the one failure and the response; no page")
    }

    @Test func aURLErrorIsNotItsOwnUnderlyingError() {
        let error = URLError(.timedOut, userInfo: [NSUnderlyingErrorKey: HTTPResponseError(statusCode: 503)])
        #expect(Self.walk(error).visited == 2, "the URL error and the response below it")
    }

    @Test func provingDeepRecordsHoldNoErrorMakesABoundedNumberOfMirrors() {
        struct DeepBatchFailure: Error {
            var records: [DeepRecord]
            var failed: [any Error]
        }
        let error = DeepBatchFailure(
            records: Array(repeating: DeepRecord(), count: 1_000), failed: [HTTPResponseError(statusCode: 429)])
        let spending = ErrorChain.measuredWalk(error) { _ in true }
        // Proving one record unbounded takes over 37,000 mirrors, and every record is proved anew.
        #expect(spending.proofMirrors <= 4 * ErrorChain.maximumReflectedValues)
        #expect(spending.reflected <= ErrorChain.maximumReflectedValues)
        #expect(FailureAnalysis(error).isTooManyRequests, "the records cost what they may, the failure is still found")
    }

    @Test func errorsReflectionNeverLooksIntoClaimNoShareOfItsBudget() {
        struct Carrier: Error { var items: [any Sendable] }
        let items: [any Sendable] = (0..<300).map { $0 as any Sendable } + [HTTPResponseError(statusCode: 429)]
        let siblings = (0..<500).map { NSError(domain: "Sync", code: $0) as any Error }
        let batch = NSError(
            domain: "Batch", code: 1,
            userInfo: [ErrorChain.multipleUnderlyingErrorsKey: [Carrier(items: items) as any Error] + siblings])
        #expect(FailureAnalysis(batch).isTooManyRequests, "500 NSErrors beside the carrier take none of its share")
    }
}
