import Foundation
import Testing

@testable import Resilience

/// An error of an app's that bridges with a `userInfo` of its own making, counting how often
/// it is asked for it.
private struct CountedUserInfoFailure: Error, CustomNSError {
    static let asked = Lock([String: Int]())
    /// Which test asks, so that tests running side by side keep their own counts.
    let tag: String

    var errorUserInfo: [String: Any] {
        Self.asked.withLock { $0[self.tag, default: 0] += 1 }
        return [NSLocalizedDescriptionKey: "counted"]
    }
}

/// A structure of an app's whose every stored value is of a type that cannot hold an error.
private struct PlainFailure: Error {
    var code: Int
    var message: String
    var fields: [String: String]
    var when: Date?
}

/// A structure that may hold an error: empty in one value, full in another.
private struct MaybeWrappingFailure: Error {
    var cause: (any Error)?
}

/// A structure that keeps a value of any type.
private struct AnyContextFailure: Error {
    var context: any Sendable
}

/// A structure that makes its own mirror.
private struct MirroredFailure: Error, CustomReflectable {
    var customMirror: Mirror { Mirror(self, children: []) }
}

/// A class instance error.
private final class ObjectFailure: Error {}

/// An enum error whose cases differ in what they carry.
private enum CaseFailure: Error {
    case plain
    case wrapping(any Error)
}

/// How the analysis reads each error once, however many facts it reads from it, and passes over
/// types that can hold nothing: mechanics that cut its cost and must not change what it reads.
@Suite("The failure analysis reads each error once and passes over types that hold nothing")
struct FailureAnalysisMechanicsTests {
    @Test func anErrorIsBridgedOnceForEveryFactReadFromIt() {
        let tag = "once"
        let analysis = FailureAnalysis(CountedUserInfoFailure(tag: tag), isCancelled: false, timeLimitFired: false)
        #expect(analysis.httpStatus == nil)
        #expect(CountedUserInfoFailure.asked.withLock { $0[tag] } == 1, "one bridge, read by every reader")
    }

    @Test func typesThatCanHoldNoErrorArePassedOver() {
        #expect(ErrorChain.Reflection.holdsNothing(URLError(.timedOut)))
        #expect(ErrorChain.Reflection.holdsNothing(CocoaError(.fileNoSuchFile)))
        #expect(ErrorChain.Reflection.holdsNothing(HTTPResponseError(statusCode: 503)))
        #expect(ErrorChain.Reflection.holdsNothing(PlainFailure(code: 1, message: "", fields: [:], when: nil)))
        #expect(ErrorChain.Reflection.holdsNothing(WorkloadFreeFailure()))
    }

    @Test func typesThatMayHoldAnErrorAreLookedInto() {
        #expect(!ErrorChain.Reflection.holdsNothing(MaybeWrappingFailure(cause: nil)))
        #expect(!ErrorChain.Reflection.holdsNothing(AnyContextFailure(context: 1)))
        #expect(!ErrorChain.Reflection.holdsNothing(MirroredFailure()))
        #expect(!ErrorChain.Reflection.holdsNothing(ObjectFailure()))
        #expect(!ErrorChain.Reflection.holdsNothing(CaseFailure.plain))
    }

    @Test func aTypeSeenEmptyStillHasItsErrorsFoundInAnotherValue() {
        #expect(FailureAnalysis(MaybeWrappingFailure(cause: nil)).httpStatus == nil)
        #expect(FailureAnalysis(CaseFailure.plain).httpStatus == nil)
        let wrapped = MaybeWrappingFailure(cause: HTTPResponseError(statusCode: 429))
        #expect(FailureAnalysis(wrapped).isTooManyRequests)
        #expect(FailureAnalysis(CaseFailure.wrapping(HTTPResponseError(statusCode: 429))).isTooManyRequests)
        #expect(FailureAnalysis(AnyContextFailure(context: HTTPResponseError(statusCode: 429))).isTooManyRequests)
    }

    @Test func passingOverATypeSpendsWhatLookingIntoItWould() {
        // The error's mirror, as before: the walk's budget shares stay as they were.
        #expect(ErrorChain.walk(HTTPResponseError(statusCode: 503)) { _ in true } == 1)
        #expect(ErrorChain.walk(URLError(.timedOut)) { _ in true } == 1)
        let wrapped = CaseFailure.wrapping(PlainFailure(code: 1, message: "", fields: [:], when: nil))
        #expect(ErrorChain.walk(wrapped) { _ in true } == 2, "the enum and the structure below it")
    }
}

/// A structure with no stored values.
private struct WorkloadFreeFailure: Error {}

/// A generic error that reports a status for one specialization only.
private struct GenericFailure<Detail: Sendable>: Error {
    var detail: Detail
}

extension GenericFailure: HTTPStatusReporting where Detail == Int {
    var httpStatusCode: Int? { self.detail }
}

/// What an error is, remembered by its type, is told apart for each type: each specialization
/// of a generic type, and every `NSError`, which is asked each time.
@Suite("What an error is, remembered by type, is each type's own")
struct ErrorKindsTests {
    @Test func eachSpecializationOfAGenericErrorIsReadAsItself() {
        #expect(FailureAnalysis(GenericFailure(detail: "x")).httpStatus == nil)
        #expect(FailureAnalysis(GenericFailure(detail: 429)).isTooManyRequests)
        #expect(FailureAnalysis(GenericFailure(detail: "y")).httpStatus == nil)
    }

    @Test func anNSErrorIsAskedEachTime() {
        #expect(ErrorKinds.of(NSError(domain: "x", code: 1)) == .unknown)
        let error = NSError(domain: "x", code: 1, userInfo: ["HTTPStatusCode": 503])
        #expect(FailureAnalysis(error).httpStatus == 503)
        #expect(FailureAnalysis(NSError(domain: "x", code: 1)).httpStatus == nil)
    }

    @Test func aValueTypeIsAskedOnce() {
        #expect(ErrorKinds.of(HTTPResponseError(statusCode: 503)).contains([.statusReporting, .retryAfterProviding]))
        #expect(ErrorKinds.of(URLError(.timedOut)) == .urlError)
        #expect(ErrorKinds.of(CancellationError()) == .cancellation)
        #expect(ErrorKinds.of(AttemptTimeoutError(timeout: .seconds(1))).contains(.timeLimit))
    }
}
