import CSQLite
import Foundation
import Resilience

/// A minimal connection to a real SQLite database, for the tests: it throws
/// ``SQLiteError`` with SQLite's extended result code and message.
///
/// The busy timeout is zero, so a lock held by another connection fails at once
/// with `SQLITE_BUSY`, and the waiting is left to the ``RetryPolicy``.
final class SQLiteConnection {
    private var handle: OpaquePointer?

    init(path: String) throws {
        var handle: OpaquePointer?
        let result = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        self.handle = handle
        guard result == SQLITE_OK else {
            let error = self.error(result)
            self.close()
            throw error
        }
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, 0)
    }

    /// Runs one or more SQL statements.
    func execute(_ sql: String) throws {
        let result = sqlite3_exec(self.handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw self.error(result) }
    }

    /// Whether the connection is inside a transaction (`sqlite3_get_autocommit` reads 0).
    var isInTransaction: Bool {
        self.handle.map { sqlite3_get_autocommit($0) == 0 } ?? false
    }

    /// The first column of every row `sql` returns, as text.
    func strings(_ sql: String) throws -> [String] {
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(self.handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK else { throw self.error(prepared) }
        defer { sqlite3_finalize(statement) }
        var rows: [String] = []
        while true {
            let step = sqlite3_step(statement)
            if step == SQLITE_DONE { return rows }
            guard step == SQLITE_ROW else { throw self.error(step) }
            rows.append(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "NULL")
        }
    }

    func close() {
        if let handle = self.handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    deinit {
        self.close()
    }

    private func error(_ result: Int32) -> SQLiteError {
        let code = self.handle.map { sqlite3_extended_errcode($0) } ?? result
        let message = self.handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return SQLiteError(code: code, message: message)
    }
}

/// A database file in a fresh temporary directory, removed by ``remove()``.
struct TemporaryDatabase {
    let directory: URL
    var path: String { self.directory.appendingPathComponent("test.sqlite").path }

    init() throws {
        self.directory = try LiveServerSupport.makeTemporaryDirectory(prefix: "resilience-sqlite")
    }

    func remove() {
        try? FileManager.default.removeItem(at: self.directory)
    }
}
