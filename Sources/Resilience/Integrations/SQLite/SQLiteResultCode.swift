/// An SQLite result code, primary or extended, as the integer `sqlite3_*`
/// functions return.
///
/// The package does not link SQLite; it only knows the numbers (from SQLite's
/// documented result codes), so it can classify errors from any SQLite wrapper.
/// An extended code carries its primary code in the low 8 bits:
/// `SQLITE_BUSY_SNAPSHOT` (517) is a kind of `SQLITE_BUSY` (5).
///
/// ```swift
/// let code = SQLiteResultCode(rawValue: sqlite3_extended_errcode(db))
/// code.primary == .busy  // true for 5, 261, 517 and 773
/// code.isBusyOrLocked    // whether a retry may succeed
/// ```
public struct SQLiteResultCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The code as returned by SQLite.
    public let rawValue: Int32

    /// Creates a code from the integer SQLite returned.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The primary code: the low 8 bits.
    public var primary: SQLiteResultCode {
        SQLiteResultCode(rawValue: self.rawValue & 0xFF)
    }

    /// Whether this is `SQLITE_BUSY` or `SQLITE_LOCKED`, or one of their extended codes:
    /// another connection holds a lock, and the same work may succeed once it lets go.
    public var isBusyOrLocked: Bool {
        let primary = self.primary
        return primary == .busy || primary == .locked
    }

    /// `SQLITE_OK` (0).
    public static let ok = SQLiteResultCode(rawValue: 0)
    /// `SQLITE_ERROR` (1): a generic error, such as an SQL syntax error.
    public static let error = SQLiteResultCode(rawValue: 1)
    /// `SQLITE_INTERNAL` (2).
    public static let `internal` = SQLiteResultCode(rawValue: 2)
    /// `SQLITE_PERM` (3): access permission denied.
    public static let permission = SQLiteResultCode(rawValue: 3)
    /// `SQLITE_ABORT` (4): the operation was aborted.
    public static let abort = SQLiteResultCode(rawValue: 4)
    /// `SQLITE_BUSY` (5): another connection holds a conflicting lock on the database file.
    public static let busy = SQLiteResultCode(rawValue: 5)
    /// `SQLITE_LOCKED` (6): a conflict inside the same connection or shared cache.
    public static let locked = SQLiteResultCode(rawValue: 6)
    /// `SQLITE_NOMEM` (7).
    public static let noMemory = SQLiteResultCode(rawValue: 7)
    /// `SQLITE_READONLY` (8).
    public static let readOnly = SQLiteResultCode(rawValue: 8)
    /// `SQLITE_INTERRUPT` (9): interrupted by `sqlite3_interrupt`.
    public static let interrupt = SQLiteResultCode(rawValue: 9)
    /// `SQLITE_IOERR` (10): the operating system reported an I/O error.
    public static let ioError = SQLiteResultCode(rawValue: 10)
    /// `SQLITE_CORRUPT` (11): the database file is malformed.
    public static let corrupt = SQLiteResultCode(rawValue: 11)
    /// `SQLITE_FULL` (13): the disk is full.
    public static let full = SQLiteResultCode(rawValue: 13)
    /// `SQLITE_CANTOPEN` (14).
    public static let cannotOpen = SQLiteResultCode(rawValue: 14)
    /// `SQLITE_PROTOCOL` (15): a locking protocol error.
    public static let `protocol` = SQLiteResultCode(rawValue: 15)
    /// `SQLITE_SCHEMA` (17): the schema changed.
    public static let schema = SQLiteResultCode(rawValue: 17)
    /// `SQLITE_TOOBIG` (18).
    public static let tooBig = SQLiteResultCode(rawValue: 18)
    /// `SQLITE_CONSTRAINT` (19): a constraint such as UNIQUE or NOT NULL was violated.
    public static let constraint = SQLiteResultCode(rawValue: 19)
    /// `SQLITE_MISMATCH` (20): a datatype mismatch.
    public static let mismatch = SQLiteResultCode(rawValue: 20)
    /// `SQLITE_MISUSE` (21): the library was used incorrectly.
    public static let misuse = SQLiteResultCode(rawValue: 21)
    /// `SQLITE_AUTH` (23): the authorizer denied the statement.
    public static let authorization = SQLiteResultCode(rawValue: 23)
    /// `SQLITE_RANGE` (25): a parameter index out of range.
    public static let range = SQLiteResultCode(rawValue: 25)
    /// `SQLITE_NOTADB` (26): the file is not a database.
    public static let notADatabase = SQLiteResultCode(rawValue: 26)
    /// `SQLITE_BUSY_RECOVERY` (261): another connection is recovering a WAL file.
    public static let busyRecovery = SQLiteResultCode(rawValue: 261)
    /// `SQLITE_BUSY_SNAPSHOT` (517): a WAL read snapshot went stale; restart the transaction.
    public static let busySnapshot = SQLiteResultCode(rawValue: 517)
    /// `SQLITE_LOCKED_SHAREDCACHE` (262).
    public static let lockedSharedCache = SQLiteResultCode(rawValue: 262)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY` (1555).
    public static let constraintPrimaryKey = SQLiteResultCode(rawValue: 1_555)
    /// `SQLITE_CONSTRAINT_UNIQUE` (2067).
    public static let constraintUnique = SQLiteResultCode(rawValue: 2_067)

    /// `SQLITE_BUSY (5)`, or `SQLite result 517 (SQLITE_BUSY)` for an unnamed extended code.
    public var description: String {
        if let name = Self.names[self.rawValue] { return "\(name) (\(self.rawValue))" }
        if let name = Self.names[self.primary.rawValue] { return "SQLite result \(self.rawValue) (\(name))" }
        return "SQLite result \(self.rawValue)"
    }

    private static let names: [Int32: String] = [
        0: "SQLITE_OK", 1: "SQLITE_ERROR", 2: "SQLITE_INTERNAL", 3: "SQLITE_PERM", 4: "SQLITE_ABORT",
        5: "SQLITE_BUSY", 6: "SQLITE_LOCKED", 7: "SQLITE_NOMEM", 8: "SQLITE_READONLY", 9: "SQLITE_INTERRUPT",
        10: "SQLITE_IOERR", 11: "SQLITE_CORRUPT", 13: "SQLITE_FULL", 14: "SQLITE_CANTOPEN",
        15: "SQLITE_PROTOCOL", 17: "SQLITE_SCHEMA", 18: "SQLITE_TOOBIG", 19: "SQLITE_CONSTRAINT",
        20: "SQLITE_MISMATCH", 21: "SQLITE_MISUSE", 23: "SQLITE_AUTH", 25: "SQLITE_RANGE", 26: "SQLITE_NOTADB",
        261: "SQLITE_BUSY_RECOVERY", 517: "SQLITE_BUSY_SNAPSHOT", 262: "SQLITE_LOCKED_SHAREDCACHE",
        1_555: "SQLITE_CONSTRAINT_PRIMARYKEY", 2_067: "SQLITE_CONSTRAINT_UNIQUE",
    ]
}
