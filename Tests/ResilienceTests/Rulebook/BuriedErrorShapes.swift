import Foundation
import Resilience
import ResilienceTesting

/// A record an app's sync succeeded with: nothing in it can be an error.
struct SyncedRecord: Sendable {
    var id: Int
    var name: String
    var tags: [String]
    var modified: Date
    var checksum: Data?
}

/// An app's batch error that says nothing of what it holds: what succeeded first, then the failures.
enum SyncFailure: Error {
    /// Records whose type proves they hold no error.
    case records(succeeded: [SyncedRecord], failed: [any Error])
    /// Identifiers, a collection of a leaf type.
    case identifiers(succeeded: [String], failed: [any Error])
    /// Outcomes whose type could hold an error (`Result`), although none of these does.
    case outcomes(succeeded: [Result<SyncedRecord, any Error>], failed: [any Error])
    /// Values of any type, which must be looked at one by one.
    case anything(context: [any Sendable], failed: [any Error])
}

/// An app's error that is a class instance: a request's context, a payload, and the cause.
final class RequestFailure: Error {
    let attempt: Int
    let payload: [any Sendable]
    let cause: any Error

    init(attempt: Int, payload: [any Sendable], cause: any Error) {
        self.attempt = attempt
        self.payload = payload
        self.cause = cause
    }
}

/// An error bridged to Cocoa: it names one failure under `NSUnderlyingErrorKey` and keeps
/// the others in a stored property its `userInfo` does not mention.
struct ExportFailure: CustomNSError {
    var exported: [SyncedRecord]
    var failures: [any Error]

    static var errorDomain: String { "Export" }
    var errorCode: Int { 3 }
    var errorUserInfo: [String: Any] {
        guard let first = self.failures.first else { return [:] }
        return [NSUnderlyingErrorKey: first]
    }
}

/// One item's failure in a batch, with the item and what came with it.
struct ItemFailure: Error {
    var record: SyncedRecord
    var attachments: [any Sendable]
    var cause: any Error
}

/// Large payloads and the shapes that bury a 429 below them, drawn from a seeded generator.
enum BuriedShapes {
    /// `count` records, all different.
    static func records(_ count: Int) -> [SyncedRecord] {
        (0..<count).map { index in
            SyncedRecord(
                id: index, name: "record-\(index)", tags: ["synced"], modified: Date(timeIntervalSince1970: 0),
                checksum: index.isMultiple(of: 2) ? Data([1, 2]) : nil)
        }
    }

    /// `count` values of several types, none of them an error.
    static func anything(_ count: Int) -> [any Sendable] {
        (0..<count).map { index -> any Sendable in index.isMultiple(of: 2) ? index : "value-\(index)" }
    }

    /// A payload of 1,100 to 1,600 values, so that looking at each one would use the walk's whole budget.
    static func largeCount(using generator: inout SeededRandomNumberGenerator) -> Int {
        Int.random(in: 1_100...1_600, using: &generator)
    }

    /// `count` transient failures with `error` at `position`.
    static func failures(_ count: Int, with error: any Error, at position: Int) -> [any Error] {
        var failures = (0..<count).map { TransientError(id: $0) as any Error }
        failures.insert(error, at: position)
        return failures
    }

    /// A user's batch error with a large payload before its failures, `error` among them at random.
    static func batch(burying error: any Error, using generator: inout SeededRandomNumberGenerator) -> any Error {
        let large = Self.largeCount(using: &generator)
        let count = Int.random(in: 1...120, using: &generator)
        let failed = Self.failures(count, with: error, at: Int.random(in: 0...count, using: &generator))
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: return SyncFailure.records(succeeded: Self.records(large), failed: failed)
        case 1: return SyncFailure.identifiers(succeeded: (0..<large).map { "id-\($0)" }, failed: failed)
        case 2:
            return SyncFailure.outcomes(succeeded: Self.records(large).map { .success($0) }, failed: failed)
        default: return SyncFailure.anything(context: Self.anything(large), failed: failed)
        }
    }

    /// One wrapper drawn at random: the library's known shapes, or a user's error carrying a
    /// large payload beside its cause (a class instance, a `CustomNSError`, an enum).
    static func wrap(_ error: any Error, using generator: inout SeededRandomNumberGenerator) -> any Error {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0:
            return RequestFailure(attempt: 2, payload: Self.records(Self.largeCount(using: &generator)), cause: error)
        case 1:
            // The error it names under `NSUnderlyingErrorKey` is not the one that matters.
            return ExportFailure(
                exported: Self.records(Self.largeCount(using: &generator)), failures: [TransientError(), error])
        case 2:
            return SyncFailure.identifiers(
                succeeded: (0..<Self.largeCount(using: &generator)).map { "id-\($0)" }, failed: [error])
        default:
            return ErrorShape.allCases.randomElement(using: &generator)!.wrap(error)
        }
    }

    /// A 429 with a seven-second hint, buried in a batch below zero to two random wrappers.
    static func buried429(using generator: inout SeededRandomNumberGenerator) -> any Error {
        let tooMany = TooManyRequestsShape.allCases.randomElement(using: &generator)!.error
        var error = Self.batch(burying: tooMany, using: &generator)
        for _ in 0..<Int.random(in: 0...2, using: &generator) {
            error = Self.wrap(error, using: &generator)
        }
        return error
    }
}
