import Foundation

/// A CloudKit error code (`CKError.Code`), as the raw integer an `NSError` in
/// ``domain`` carries.
///
/// The package does not import CloudKit, which exists only on Apple platforms;
/// it reads the code off any error bridged to `NSError`. The values are those of
/// Apple's `CKError.h`.
///
/// ```swift
/// let error = NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.zoneBusy.rawValue)
/// CloudKitErrorCode(error) == .zoneBusy  // true
/// ```
public struct CloudKitErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The error domain of CloudKit errors (`CKErrorDomain`).
    public static let domain = "CKErrorDomain"
    /// The `userInfo` key of a partial failure's per-item errors (`CKPartialErrorsByItemIDKey`).
    public static let partialErrorsKey = "CKPartialErrors"
    /// The `userInfo` key of a `serverRecordChanged` error's record as the server has it
    /// (`CKRecordChangedErrorServerRecordKey`): merge your changes into it, then save it.
    ///
    /// ``CloudKitRecordConflict`` reads the three records of a conflict.
    public static let serverRecordKey = "ServerRecord"
    /// The `userInfo` key of a `serverRecordChanged` error's record as the app tried to save it
    /// (`CKRecordChangedErrorClientRecordKey`).
    public static let clientRecordKey = "ClientRecord"
    /// The `userInfo` key of a `serverRecordChanged` error's record as the app last fetched it,
    /// before its own changes (`CKRecordChangedErrorAncestorRecordKey`): the common ancestor of
    /// a three-way merge.
    public static let ancestorRecordKey = "AncestorRecord"
    /// The `userInfo` key of the flag that says CloudKit deleted the record zone because the person
    /// reset their encrypted data (`CKErrorUserDidResetEncryptedDataKey`).
    ///
    /// CloudKit sets it, as a Boolean `NSNumber`, on `zoneNotFound`: the keys that encrypted the
    /// zone's data are gone, and the zone with them. Delete the zone if it still exists, create it
    /// again and upload the data the device holds again: CloudKit encrypts it with the new keys.
    /// An error carrying the flag (set to true) stops with ``RetryStopReason/setupRequired``,
    /// whatever its code, and ``RetryAdvice`` says ``RetryAdvice/Reason/setupRequired``.
    ///
    /// Apple's documentation names the constant but not its value; this is the value the
    /// framework's constant holds, as published bindings of it record.
    public static let userDidResetEncryptedDataKey = "CKUserDidResetEncryptedData"

    /// The codes by which CloudKit says the service, not the request, is the trouble: it is
    /// unavailable, the zone is busy, or the client sends too much. Apple's guidance for each is
    /// to wait (for `CKRetryAfter`, when present) and try again; a breaker hears them, on the
    /// whole request or on an item of a partial failure.
    static let serviceBusyCodes: Set<CloudKitErrorCode> = [.serviceUnavailable, .zoneBusy, .requestRateLimited]

    /// A bare `serverResponseLost` error: the batch helper asks the policy's classifier about it
    /// to learn whether a batch that may have been partly saved may be sent again whole.
    static let lostResponseError: any Error = NSError(domain: Self.domain, code: Self.serverResponseLost.rawValue)

    /// The raw code.
    public let rawValue: Int

    /// Creates a code from its raw value.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// The code of `error` when it is in ``domain``, or `nil`.
    public init?(_ error: any Error) {
        self.init(ErrorChain.Node(error))
    }

    /// The code of the node's error, read from its shared `NSError` form.
    init?(_ node: ErrorChain.Node) {
        guard let nsError = node.nsError, nsError.domain == Self.domain else { return nil }
        self.init(rawValue: nsError.code)
    }

    /// The code the rules judge the node's error by: its own, or `zoneNotFound` when the error
    /// says the person's reset of their encrypted data deleted the zone
    /// (``userDidResetEncryptedDataKey``), whatever code it carries the flag on. A partial
    /// failure keeps its code: its items speak for themselves.
    init?(judging node: ErrorChain.Node) {
        guard let code = CloudKitErrorCode(node) else { return nil }
        let isReset = code != .partialFailure && code != .zoneNotFound && Self.saysEncryptedDataWasReset(node)
        self = isReset ? .zoneNotFound : code
    }

    /// Whether the node's error carries CloudKit's flag that the person's reset of their
    /// encrypted data deleted the zone, set to true (a Boolean `NSNumber`, or a `Bool`).
    static func saysEncryptedDataWasReset(_ node: ErrorChain.Node) -> Bool {
        guard let flag = node.userInfo[Self.userDidResetEncryptedDataKey] else { return false }
        if let number = flag as? NSNumber { return number.boolValue }
        return flag as? Bool ?? false
    }

    /// A nonrecoverable error inside CloudKit (1).
    public static let internalError = CloudKitErrorCode(rawValue: 1)
    /// Some items of a batch failed; see ``partialErrorsKey`` (2).
    public static let partialFailure = CloudKitErrorCode(rawValue: 2)
    /// The network is unavailable (3).
    public static let networkUnavailable = CloudKitErrorCode(rawValue: 3)
    /// The network is available but CloudKit could not be reached (4).
    public static let networkFailure = CloudKitErrorCode(rawValue: 4)
    /// The container is unknown or unauthorized (5).
    public static let badContainer = CloudKitErrorCode(rawValue: 5)
    /// CloudKit is unavailable; may carry a retry-after hint (6).
    public static let serviceUnavailable = CloudKitErrorCode(rawValue: 6)
    /// CloudKit is rate-limiting the app; carries a retry-after hint (7).
    public static let requestRateLimited = CloudKitErrorCode(rawValue: 7)
    /// The app lacks a required entitlement (8).
    public static let missingEntitlement = CloudKitErrorCode(rawValue: 8)
    /// The user is not signed in to iCloud (9).
    public static let notAuthenticated = CloudKitErrorCode(rawValue: 9)
    /// The user may not save or fetch this data (10).
    public static let permissionFailure = CloudKitErrorCode(rawValue: 10)
    /// The record does not exist (11).
    public static let unknownItem = CloudKitErrorCode(rawValue: 11)
    /// The request contains invalid information (12).
    public static let invalidArguments = CloudKitErrorCode(rawValue: 12)
    /// The server's version of the record is newer; merge into it, then save that
    /// (14; see ``CloudKitRecordConflict``).
    public static let serverRecordChanged = CloudKitErrorCode(rawValue: 14)
    /// The server rejected the request (15).
    public static let serverRejectedRequest = CloudKitErrorCode(rawValue: 15)
    /// An asset file was not found (16).
    public static let assetFileNotFound = CloudKitErrorCode(rawValue: 16)
    /// An asset file changed while being saved (17).
    public static let assetFileModified = CloudKitErrorCode(rawValue: 17)
    /// The app version is older than the oldest allowed (18).
    public static let incompatibleVersion = CloudKitErrorCode(rawValue: 18)
    /// A unique constraint was violated (19).
    public static let constraintViolation = CloudKitErrorCode(rawValue: 19)
    /// The operation was cancelled (20).
    public static let operationCancelled = CloudKitErrorCode(rawValue: 20)
    /// The change token expired; refetch from scratch (21).
    public static let changeTokenExpired = CloudKitErrorCode(rawValue: 21)
    /// The item failed because another item in the same atomic batch failed (22).
    public static let batchRequestFailed = CloudKitErrorCode(rawValue: 22)
    /// The record zone is too busy; may carry a retry-after hint (23).
    public static let zoneBusy = CloudKitErrorCode(rawValue: 23)
    /// The operation was sent to the wrong database (24).
    public static let badDatabase = CloudKitErrorCode(rawValue: 24)
    /// Saving would exceed the storage quota (25).
    public static let quotaExceeded = CloudKitErrorCode(rawValue: 25)
    /// The record zone does not exist; create it, then send again (26).
    public static let zoneNotFound = CloudKitErrorCode(rawValue: 26)
    /// The request is too large; split the batch (27).
    public static let limitExceeded = CloudKitErrorCode(rawValue: 27)
    /// The user deleted the zone in Settings; create it and its subscriptions again, then send again (28).
    public static let userDeletedZone = CloudKitErrorCode(rawValue: 28)
    /// The share has too many participants (29).
    public static let tooManyParticipants = CloudKitErrorCode(rawValue: 29)
    /// The record is already shared (30).
    public static let alreadyShared = CloudKitErrorCode(rawValue: 30)
    /// The target of a reference was not found (31).
    public static let referenceViolation = CloudKitErrorCode(rawValue: 31)
    /// A managed-account restriction rejected the request (32).
    public static let managedAccountRestricted = CloudKitErrorCode(rawValue: 32)
    /// The user is not a participant of the share (33).
    public static let participantMayNeedVerification = CloudKitErrorCode(rawValue: 33)
    /// The server processed the request but the response was lost (34).
    public static let serverResponseLost = CloudKitErrorCode(rawValue: 34)
    /// The asset is not available (35).
    public static let assetNotAvailable = CloudKitErrorCode(rawValue: 35)
    /// The iCloud account is temporarily unavailable; wait for the account-changed event (36).
    public static let accountTemporarilyUnavailable = CloudKitErrorCode(rawValue: 36)

    /// `CKErrorDomain 23`.
    public var description: String { "\(Self.domain) \(self.rawValue)" }
}
