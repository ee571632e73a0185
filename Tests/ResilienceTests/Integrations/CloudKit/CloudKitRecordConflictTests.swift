import Foundation
import Resilience
import Testing

/// The records of a `serverRecordChanged` error, in errors made as CloudKit makes them: an `NSError` in
/// `CKErrorDomain` whose `userInfo` holds the records under CloudKit's own key strings.
@Suite struct CloudKitRecordConflictTests {
    /// Stands in for `CKRecord`, a class CloudKit puts in `userInfo` as is.
    final class Record: NSObject, Sendable {
        let title: String
        let changeTag: String

        init(title: String, changeTag: String) {
            self.title = title
            self.changeTag = changeTag
        }
    }

    let server = Record(title: "Groceries (edited on the iPad)", changeTag: "5")
    let client = Record(title: "Groceries (edited here)", changeTag: "4")
    let ancestor = Record(title: "Groceries", changeTag: "4")

    /// A conflict as CloudKit reports it, keyed by the strings behind `CKRecordChangedError…Key`.
    func conflictError(ancestor: Record? = nil) -> NSError {
        var userInfo: [String: Any] = [
            NSLocalizedDescriptionKey: "Server Record Changed",
            "ServerRecord": self.server,
            "ClientRecord": self.client,
        ]
        if let ancestor { userInfo["AncestorRecord"] = ancestor }
        return NSError(domain: "CKErrorDomain", code: 14, userInfo: userInfo)
    }

    @Test func theKeysAreCloudKitsStrings() {
        #expect(CloudKitErrorCode.serverRecordKey == "ServerRecord")
        #expect(CloudKitErrorCode.clientRecordKey == "ClientRecord")
        #expect(CloudKitErrorCode.ancestorRecordKey == "AncestorRecord")
    }

    @Test func readsTheThreeRecords() throws {
        let conflict = try #require(
            CloudKitRecordConflict(self.conflictError(ancestor: self.ancestor), recordType: Record.self))
        #expect(conflict.serverRecord === self.server)
        #expect(conflict.clientRecord === self.client)
        #expect(conflict.ancestorRecord === self.ancestor)
    }

    @Test func anAncestorCloudKitLeftOutIsNil() throws {
        let conflict = try #require(CloudKitRecordConflict(self.conflictError(), recordType: Record.self))
        #expect(conflict.serverRecord === self.server)
        #expect(conflict.ancestorRecord == nil)
    }

    @Test func readsAConflictWrappedInAnAppsError() throws {
        let wrapped = NSError(domain: "Sync", code: 1, userInfo: [NSUnderlyingErrorKey: self.conflictError()])
        let conflict = try #require(CloudKitRecordConflict(wrapped, recordType: Record.self))
        #expect(conflict.serverRecord === self.server)
    }

    /// In a batch, the conflict is one item's error: the partial failure is not a conflict, its item is.
    @Test func readsAConflictingItemOfAPartialFailure() throws {
        let partial = NSError(
            domain: "CKErrorDomain", code: 2,
            userInfo: [
                "CKPartialErrors": [
                    "A": self.conflictError(), "B": NSError(domain: "CKErrorDomain", code: 22),
                ]
            ])
        #expect(CloudKitRecordConflict(partial, recordType: Record.self) == nil)
        let item = try #require(CloudKitPartialFailure(partial)?.failedItems["A"])
        #expect(try #require(CloudKitRecordConflict(item, recordType: Record.self)).serverRecord === self.server)
    }

    @Test func anotherFailureOrAnotherRecordTypeIsNoConflict() {
        let busy = NSError(domain: "CKErrorDomain", code: 23, userInfo: ["ServerRecord": self.server])
        #expect(CloudKitRecordConflict(busy, recordType: Record.self) == nil)
        #expect(CloudKitRecordConflict(self.conflictError(), recordType: NSString.self) == nil)
        let withoutRecords = NSError(domain: "CKErrorDomain", code: 14)
        #expect(CloudKitRecordConflict(withoutRecords, recordType: Record.self) == nil)
    }
}
