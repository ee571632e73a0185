import Foundation

/// The three versions of a record that a CloudKit `serverRecordChanged` error carries, for
/// merging the app's changes into the server's record.
///
/// A save with the default save policy (`ifServerRecordUnchanged`) fails with
/// `serverRecordChanged` when another device saved the record since this one fetched it.
/// The error's `userInfo` then holds the record as the server has it
/// (``CloudKitErrorCode/serverRecordKey``), as this device tried to save it
/// (``CloudKitErrorCode/clientRecordKey``) and as this device fetched it before changing it
/// (``CloudKitErrorCode/ancestorRecordKey``). Apply your changes to ``serverRecord``, the one
/// whose change tag the server accepts, and save that: saving the client's record again fails
/// the same way.
///
/// The package does not import CloudKit, so the record type is a parameter: `CKRecord` in an app.
///
/// ```swift
/// do {
///     try await database.save(edited)
/// } catch {
///     guard let conflict = CloudKitRecordConflict(error, recordType: CKRecord.self) else { throw error }
///     let merged = conflict.serverRecord
///     merged["title"] = edited["title"]  // or a three-way merge against conflict.ancestorRecord
///     try await database.save(merged)
/// }
/// ```
///
/// An item of a partial failure is read the same way: pass the item's error.
public struct CloudKitRecordConflict<Record> {
    /// The record as the server has it, saved by another device since this one fetched it.
    public let serverRecord: Record
    /// The record as this device tried to save it, with its changes; `nil` when the error has none.
    public let clientRecord: Record?
    /// The record as this device fetched it, before its changes; `nil` when the error has none.
    ///
    /// For a record the device created rather than fetched, CloudKit's ancestor may hold no
    /// values at all: there was no earlier version.
    public let ancestorRecord: Record?

    /// Reads the records of the `serverRecordChanged` error in `error`'s chain, or returns
    /// `nil` when there is none or it holds no server record of type `Record`.
    ///
    /// The outermost CloudKit error in the chain is the one read, as ``CloudKitRetryClassifier``
    /// reads it: `error` itself, or one wrapped in `NSUnderlyingErrorKey` or in an app's own
    /// error (see ``UnderlyingErrorProviding``).
    ///
    /// - Parameters:
    ///   - error: A save's error, or one item's error from a partial failure.
    ///   - recordType: The type of the records (`CKRecord`).
    public init?(_ error: any Error, recordType: Record.Type = Record.self) {
        let outermost = ErrorChain.first(in: error) { node in CloudKitErrorCode(node).map { (code: $0, error: node) } }
        guard let outermost, outermost.code == .serverRecordChanged else { return nil }
        let userInfo = (outermost.error as NSError).userInfo
        guard let server = userInfo[CloudKitErrorCode.serverRecordKey] as? Record else { return nil }
        self.serverRecord = server
        self.clientRecord = userInfo[CloudKitErrorCode.clientRecordKey] as? Record
        self.ancestorRecord = userInfo[CloudKitErrorCode.ancestorRecordKey] as? Record
    }
}

extension CloudKitRecordConflict: Sendable where Record: Sendable {}
