extension RetryPolicy {
    /// Runs a write transaction, retrying it from the start when SQLite reports
    /// the database busy or locked, and rolling it back before each retry.
    ///
    /// Each attempt runs `beginStatement`, then `operation`, then the statement that
    /// ends it: `COMMIT` for a transaction, `RELEASE name` for a savepoint
    /// (`beginStatement: "SAVEPOINT name"`, for work nested in a transaction the
    /// caller already holds: committing would commit the caller's). When the work
    /// or the commit throws, the attempt rolls back (`ROLLBACK`, or `ROLLBACK TO name`
    /// then `RELEASE name`) and the policy decides whether to try again. So a
    /// transaction that hits `SQLITE_BUSY` halfway leaves nothing behind, and its
    /// rows are written once, by the attempt that commits.
    ///
    /// The statement is read as SQLite reads it, and must begin a transaction or a savepoint and
    /// do nothing else: one `BEGIN` (with `DEFERRED`, `IMMEDIATE` or `EXCLUSIVE`, and
    /// `TRANSACTION`, if wanted), or one `SAVEPOINT` and its name. Keywords may be in any case;
    /// whitespace and comments (`--` to the end of the line, `/* … */`) may stand before the
    /// statement, between its words, and after it. The savepoint's name is a bare word SQLite
    /// takes for a name (not a reserved word such as `select`, `from` or `transaction`, nor
    /// `savepoint`, which `RELEASE` would read as its keyword), or a name quoted with `"…"`, `'…'` or backquotes (the quote doubled for one inside) or with
    /// `[…]`, spaces allowed; `RELEASE` and `ROLLBACK TO` name it as written. Any number of `;`
    /// may follow the statement (SQLite runs an empty statement as nothing), and nothing else.
    /// Any other statement throws ``ConfigurationError`` before anything runs: one that begins
    /// nothing (an empty string, a comment, a `SELECT`) would leave the work in autocommit,
    /// where each statement commits on its own and a retry writes the first rows again, and one
    /// with another statement after it would run that statement outside the work.
    ///
    /// A savepoint begun outside any transaction (`isInTransaction` read `false` before
    /// the `SAVEPOINT`) opens one of its own, and is retried as a transaction is: its
    /// `RELEASE` commits, and may be busy as a `COMMIT` is, so a failed attempt is undone
    /// with `ROLLBACK`, which ends that transaction where `ROLLBACK TO` would not. Without
    /// `isInTransaction` a `RELEASE` that fails after `ROLLBACK TO` is followed by
    /// `ROLLBACK`; the attempt is then retried only when that `RELEASE` was busy or locked
    /// (it was committing, so the savepoint was the outermost), and otherwise ends the call
    /// with its own error, since a transaction of the caller's may be gone.
    ///
    /// Only SQLite's busy and locked outcomes are retried unless `classifier` says
    /// otherwise: an error the work throws for its own reasons (a business rule, a
    /// constraint) ends the call at once. A rollback that fails ends the call with
    /// ``SQLiteRollbackError``, which carries both errors: the connection may still be
    /// inside the transaction, and retrying on it would fail or nest.
    ///
    /// An attempt that provably left nothing behind (SQLite refused its `BEGIN`, or its
    /// rollback succeeded) is retried even inside a call declared not idempotent, such as
    /// an `execute(idempotency: .notIdempotent)` around a `POST` whose result the
    /// transaction records: the transaction says so about its own attempts, as a request
    /// that was never sent (``RequestDelivery/notSent``) does. That word counts for this
    /// call's retries only: calls nested in `operation` still inherit the enclosing
    /// declaration, and the error the call ends with is the attempt's own, so the
    /// enclosing call does not run again. An attempt whose transaction SQLite ended on its
    /// own (`isInTransaction` reads `false` and no rollback was run) proves nothing, and
    /// follows the rules for its call's idempotency.
    ///
    /// `operation` runs again on each retry, so it must have no effect outside the
    /// database (no request sent, no file written, no state of the app changed): the
    /// rollback undoes its statements, and nothing else.
    ///
    /// A savepoint begun inside a transaction the caller holds is not retried once SQLite
    /// has rolled back that whole transaction (`isInTransaction` read `true` before the
    /// `SAVEPOINT` and `false` after the failure): the call ends at once with
    /// ``SQLiteEnclosingTransactionLostError`` (``RetryStopReason/notRetryable``), since
    /// a retry's `SAVEPOINT` would open a new transaction and its `RELEASE` would commit
    /// the nested work on its own.
    ///
    /// Nor is a savepoint nested in the caller's transaction retried after
    /// `SQLITE_BUSY_SNAPSHOT` (517): in WAL mode the caller's read snapshot is stale, and
    /// every write in that transaction fails until it ends. The attempt is rolled back to
    /// the savepoint and the call ends at once with ``SQLiteEnclosingTransactionStaleError``
    /// (``RetryStopReason/notRetryable``); the caller's transaction stays open, for the
    /// caller to roll back and run again. A `writeTransaction` running that transaction
    /// does so on its own: ``SQLiteRetryClassifier`` retries the busy code inside the error.
    ///
    /// Set the connection's busy timeout low (or zero) and let the policy do the
    /// waiting: its backoff has jitter, a deadline and cancellation, and does not
    /// hold a thread.
    ///
    /// ```swift
    /// try await policy.writeTransaction(executeSQL: db.execute) {
    ///     try db.execute("INSERT INTO orders(id, total) VALUES (42, 990)")
    ///     try db.execute("UPDATE stock SET count = count - 1 WHERE item = 7")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - beginStatement: Starts the transaction; `BEGIN IMMEDIATE` (the default) takes the write
    ///     lock up front, so a busy database fails before any work is done. `SAVEPOINT name`
    ///     runs the work in a savepoint instead. Any statement but one `BEGIN` or `SAVEPOINT`
    ///     throws ``ConfigurationError``.
    ///   - classifier: Decides which failures are retried; defaults to ``SQLiteRetryClassifier``,
    ///     which retries busy and locked only. Errors it has no opinion on are not retried. The
    ///     ``Rulebook``'s rules apply first, as everywhere.
    ///   - isInTransaction: Whether the connection is inside a transaction now
    ///     (`sqlite3_get_autocommit(db) == 0`), if you can tell; the rollback is then skipped when
    ///     SQLite already rolled the transaction back on its own, as it does on some errors, and a
    ///     savepoint whose enclosing transaction SQLite rolled back, or whose snapshot is stale, is
    ///     not retried; a savepoint outside any transaction is rolled back with `ROLLBACK`. When
    ///     `executeSQL` throws for the begin statement after the transaction started (this reads
    ///     `false` before it and `true` after), that transaction is rolled back too.
    ///   - executeSQL: Runs one SQL statement on the connection, throwing on failure (with an
    ///     ``SQLiteError``, or an error the classifier understands).
    ///   - operation: The transaction's work. It may run more than once, so it must have no
    ///     effect outside the database.
    /// - Returns: The value of the attempt that committed.
    /// - Throws: The last attempt's error, unchanged; ``SQLiteRollbackError`` when rolling back
    ///   failed; ``SQLiteEnclosingTransactionLostError`` when SQLite rolled back the transaction a
    ///   savepoint was nested in; ``SQLiteEnclosingTransactionStaleError`` when that transaction's
    ///   read snapshot is stale; ``ConfigurationError``, running nothing, when `beginStatement` is
    ///   not one `BEGIN` or one `SAVEPOINT` whose name can be read.
    public nonisolated(nonsending) func writeTransaction<Value>(
        beginStatement: String = "BEGIN IMMEDIATE",
        classifier: any RetryClassifier = SQLiteRetryClassifier(),
        isInTransaction: (() -> Bool)? = nil,
        executeSQL: (String) async throws -> Void,
        operation: () async throws -> Value
    ) async throws -> Value {
        let statements = try SQLiteTransactionStatements(beginStatement: beginStatement)
        // Reads result codes as the call's classifier does, when it is SQLite's.
        let codes = classifier as? SQLiteRetryClassifier ?? SQLiteRetryClassifier()
        // What each attempt knows about its own failure, for this call's decisions only.
        let report = AttemptReport()
        var options = CallOptions(idempotency: nil, classifier: classifier)
        options.attemptReport = report
        return try await self.run(isolation: #isolation, firstFailure: nil, options: options) { _ in
            // Whether the connection was inside a transaction before this attempt began, if known.
            let wasInTransaction = isInTransaction?()
            // Where a savepoint stands: inside the caller's transaction (`true`), opening its own
            // (`false`: its RELEASE commits), or unknown (`nil`).
            let savepointWasNested = statements.isSavepoint ? wasInTransaction : nil
            // A savepoint inside the caller's transaction must not outlive that transaction.
            let nestedInCallers = savepointWasNested == true
            let callersTransactionIsGone = { nestedInCallers && isInTransaction?() == false }
            do {
                try await executeSQL(statements.begin)
            } catch {
                if callersTransactionIsGone() {
                    report.report(.mustNotRepeat)
                    throw SQLiteEnclosingTransactionLostError(savepointError: error)
                }
                if wasInTransaction == false, isInTransaction?() == true {
                    // The begin statement started a transaction and then threw (a wrapper that fails
                    // after running it): the transaction is this attempt's, and ROLLBACK ends it.
                    do {
                        try await executeSQL("ROLLBACK")
                    } catch let rollbackError {
                        report.report(.mustNotRepeat)
                        throw SQLiteRollbackError(transactionError: error, rollbackError: rollbackError)
                    }
                }
                // Refused at its start, or undone: the attempt did nothing.
                report.report(.noEffect)
                throw error
            }
            do {
                let value = try await operation()
                try await executeSQL(statements.commit)
                return value
            } catch {
                if callersTransactionIsGone() {
                    report.report(.mustNotRepeat)
                    throw SQLiteEnclosingTransactionLostError(savepointError: error)
                }
                guard isInTransaction?() ?? true else {
                    // SQLite ended the transaction on its own; nothing is proven about what it kept.
                    throw error
                }
                let undone: Bool
                do {
                    undone = try await statements.rollBack(
                        savepointWasNested: savepointWasNested, codes: codes, executeSQL: executeSQL)
                } catch let rollbackError {
                    report.report(.mustNotRepeat)
                    throw SQLiteRollbackError(transactionError: error, rollbackError: rollbackError)
                }
                guard undone else {
                    // Rolled back, but whether a transaction of the caller's went with it is unknown.
                    report.report(.mustNotRepeat)
                    throw error
                }
                if nestedInCallers, codes.resultCode(in: error) == .busySnapshot {
                    // The caller's read snapshot is stale: every write in its transaction fails
                    // until that transaction ends, so only the caller can retry, from its BEGIN.
                    report.report(.mustNotRepeat)
                    throw SQLiteEnclosingTransactionStaleError(savepointError: error)
                }
                // Rolled back: the attempt left nothing behind.
                report.report(.noEffect)
                throw error
            }
        }.get()
    }
}

/// The statements that begin, commit and roll back one transaction or savepoint.
struct SQLiteTransactionStatements: Sendable, Hashable {
    var begin: String
    var commit: String
    /// Undoes a transaction, or a savepoint nested in a transaction the caller holds.
    var rollback: [String]
    /// Whether the statements run a savepoint rather than a transaction.
    var isSavepoint: Bool

    /// Undoes a failed attempt that is still inside its transaction; returns whether the
    /// attempt is proven to have left nothing behind and the caller's state as it was.
    ///
    /// A savepoint that opened its own transaction (`savepointWasNested` is `false`) is undone
    /// with `ROLLBACK`: `ROLLBACK TO` would leave the transaction open, and its `RELEASE` is a
    /// commit, which a reader's lock can make busy. When where the savepoint stood is unknown,
    /// `ROLLBACK TO` and `RELEASE` run, and a `RELEASE` that fails is followed by `ROLLBACK`;
    /// the attempt then counts as undone only when that `RELEASE` was busy or locked, which
    /// proves it was committing, so the savepoint was the outermost.
    nonisolated(nonsending) func rollBack(
        savepointWasNested: Bool?,
        codes: SQLiteRetryClassifier,
        executeSQL: (String) async throws -> Void
    ) async throws -> Bool {
        guard self.isSavepoint, savepointWasNested != false else {
            for statement in self.isSavepoint ? ["ROLLBACK"] : self.rollback { try await executeSQL(statement) }
            return true
        }
        let (rollbackTo, release) = (self.rollback[0], self.rollback[1])
        try await executeSQL(rollbackTo)
        do {
            try await executeSQL(release)
            return true
        } catch let releaseError where savepointWasNested == nil {
            try await executeSQL("ROLLBACK")
            return codes.resultCode(in: releaseError)?.isBusyOrLocked == true
        }
    }

    /// Reads `beginStatement`; throws ``ConfigurationError`` unless it is one `BEGIN` or one
    /// `SAVEPOINT` whose name is one SQLite identifier.
    init(beginStatement: String) throws {
        self.begin = beginStatement
        guard let name = try Self.savepointName(in: beginStatement) else {
            self.commit = "COMMIT"
            self.rollback = ["ROLLBACK"]
            self.isSavepoint = false
            return
        }
        self.commit = "RELEASE \(name)"
        // ROLLBACK TO leaves the savepoint on the stack; RELEASE pops it.
        self.rollback = ["ROLLBACK TO \(name)", "RELEASE \(name)"]
        self.isSavepoint = true
    }

    /// The name after `SAVEPOINT`, spelled as written (quotes included), or `nil` when the
    /// statement is a `BEGIN`; throws ``ConfigurationError`` for any other statement, so that
    /// each attempt is sure to run inside a transaction or savepoint of its own.
    ///
    /// The statement is read as SQLite's tokenizer reads it: whitespace and comments (`--` to the
    /// end of the line, `/* … */` to its `*/` or the end of the text) may stand before the
    /// keyword, between its words, and after it, around any number of `;` (SQLite runs an empty
    /// statement as nothing). Keywords are read in any case. `BEGIN` may be followed by one of
    /// `DEFERRED`, `IMMEDIATE` and `EXCLUSIVE`, then by `TRANSACTION` and a name SQLite ignores.
    /// A name follows SQLite's grammar: a bare word that is not one of SQLite's reserved words
    /// (`select`, `from`, `transaction`; nor, after `SAVEPOINT`, `savepoint`, which `RELEASE`
    /// would read as its keyword), or a name quoted with `"…"`, `'…'` or backquotes (the quote
    /// doubled for one inside), or with `[…]`.
    static func savepointName(in statement: String) throws -> Substring? {
        var rest = Self.droppingSpace(Substring(statement).unicodeScalars)
        var savepoint: Substring.UnicodeScalarView?
        switch Self.keyword(at: rest) {
        case "SAVEPOINT":
            rest = Self.droppingSpace(rest.dropFirst("SAVEPOINT".unicodeScalars.count))
            // `RELEASE savepoint` and `ROLLBACK TO savepoint` read the word as the keyword, and
            // the name they need is missing.
            guard let name = Self.identifier(at: rest), Self.keyword(at: name) != "SAVEPOINT" else {
                throw Self.malformed(statement)
            }
            savepoint = name
            rest = Self.droppingSpace(rest.dropFirst(name.count))
        case "BEGIN":
            rest = Self.droppingSpace(rest.dropFirst("BEGIN".unicodeScalars.count))
            if let mode = Self.keyword(at: rest), ["DEFERRED", "IMMEDIATE", "EXCLUSIVE"].contains(mode) {
                rest = Self.droppingSpace(rest.dropFirst(mode.unicodeScalars.count))
            }
            if Self.keyword(at: rest) == "TRANSACTION" {
                rest = Self.droppingSpace(rest.dropFirst("TRANSACTION".unicodeScalars.count))
                // SQLite reads a name after TRANSACTION, and does nothing with it.
                if rest.first != ";", let name = Self.identifier(at: rest) {
                    rest = Self.droppingSpace(rest.dropFirst(name.count))
                }
            }
        default:
            // Anything else runs without starting a transaction (`SELECT 1`, a comment, nothing at
            // all), or ends one (`COMMIT`): the work would run in autocommit, each statement
            // committed on its own, and no rollback could undo the first rows of a failed attempt.
            throw Self.malformed(statement)
        }
        while rest.first == ";" {
            // After a statement it ran, `sqlite3_exec` skips whitespace (vertical tab included) before
            // reading on, and a `;` alone is an empty statement that runs nothing.
            rest = Self.droppingSpace(rest.dropFirst().drop(while: Self.isSpace))
        }
        guard rest.isEmpty else {
            // A statement after the first would run inside the transaction, outside the attempt's
            // work, and its failure would look like a refused BEGIN.
            throw Self.malformed(statement)
        }
        return savepoint.map(Substring.init)
    }

    /// The keyword `text` starts with, in upper case, or `nil` when it starts with no ASCII word.
    private static func keyword(at text: Substring.UnicodeScalarView) -> String? {
        let word = text.prefix(while: Self.isWordCharacter)
        guard !word.isEmpty, word.allSatisfy(\.isASCII) else { return nil }
        return Substring(word).uppercased()
    }

    /// The error for a begin statement that is not one `BEGIN` or one `SAVEPOINT` with a name.
    private static func malformed(_ statement: String) -> ConfigurationError {
        ConfigurationError(
            setting: "beginStatement", value: statement,
            accepted:
                #"BEGIN (with DEFERRED, IMMEDIATE or EXCLUSIVE, and TRANSACTION, if wanted) or SAVEPOINT followed by one name (a bare word SQLite does not reserve, or quoted with "", '', [] or ``), with nothing but ";", whitespace and comments after it"#
        )
    }

    /// `text` without the whitespace and comments it starts with, skipped as SQLite's tokenizer
    /// skips them: space, tab, line feed, form feed and carriage return (a vertical tab only after
    /// one of those); `--` up to the end of the line; `/*` with at least one character after it,
    /// up to the `*/` that closes it or the end of the text.
    private static func droppingSpace(_ text: Substring.UnicodeScalarView) -> Substring.UnicodeScalarView {
        var rest = text
        while let first = rest.first {
            let second = rest.dropFirst().first
            switch first {
            case " ", "\t", "\n", "\u{0C}", "\r":
                // A vertical tab counts as whitespace only inside a run another whitespace character starts.
                rest = rest.drop(while: Self.isSpace)
            case "-" where second == "-":
                rest = rest.drop { $0 != "\n" }
            case "/" where second == "*" && rest.dropFirst(2).first != nil:
                let body = rest.dropFirst(2)
                // Unclosed, the comment runs to the end of the text.
                rest = body[body.endIndex...]
                var index = body.startIndex
                while index < body.endIndex {
                    let next = body.index(after: index)
                    if body[index] == "*", next < body.endIndex, body[next] == "/" {
                        rest = body[body.index(after: next)...]
                        break
                    }
                    index = next
                }
            default:
                return rest
            }
        }
        return rest
    }

    /// SQLite's keywords that it never reads as a bare name (`SAVEPOINT select` is a syntax
    /// error), as listed by `sqlite3_keyword_name` in SQLite 3.40 and refused by its parser
    /// where a name must stand. Its other keywords fall back to names (`SAVEPOINT end`).
    private static let reservedWords: Set<String> = [
        "ADD", "ALL", "ALTER", "AND", "AS", "AUTOINCREMENT", "BETWEEN", "CASE", "CHECK", "COLLATE", "COMMIT",
        "CONSTRAINT", "CREATE", "DEFAULT", "DEFERRABLE", "DELETE", "DISTINCT", "DROP", "ELSE", "ESCAPE", "EXCEPT",
        "EXISTS", "FOREIGN", "FROM", "GROUP", "HAVING", "IN", "INDEX", "INSERT", "INTERSECT", "INTO", "IS",
        "ISNULL", "JOIN", "LIMIT", "NOT", "NOTHING", "NOTNULL", "NULL", "ON", "OR", "ORDER", "PRIMARY",
        "REFERENCES", "RETURNING", "SELECT", "SET", "TABLE", "THEN", "TO", "TRANSACTION", "UNION", "UNIQUE",
        "UPDATE", "USING", "VALUES", "WHEN", "WHERE",
    ]

    /// The identifier `text` starts with, or `nil` when it starts with none or with a word
    /// SQLite reserves.
    private static func identifier(at text: Substring.UnicodeScalarView) -> Substring.UnicodeScalarView? {
        guard let first = text.first else { return nil }
        let closing: Unicode.Scalar? =
            switch first {
            case "\"": "\""
            case "'": "'"
            case "`": "`"
            case "[": "]"
            default: nil
            }
        guard let closing else {
            // A bare word, not starting with a digit or `$`.
            guard Self.isWordCharacter(first), !("0"..."9").contains(first), first != "$" else { return nil }
            let word = text.prefix(while: Self.isWordCharacter)
            if let keyword = Self.keyword(at: word), Self.reservedWords.contains(keyword) { return nil }
            return word
        }
        // A quoted name: up to the closing character; in "…", '…' and `…`, a doubled one stands for itself.
        let doubles = closing != "]"
        var index = text.index(after: text.startIndex)
        while index < text.endIndex {
            let next = text.index(after: index)
            if text[index] == closing {
                guard doubles, next < text.endIndex, text[next] == closing else { return text[..<next] }
                index = text.index(after: next)
            } else {
                index = next
            }
        }
        return nil
    }

    /// Whether SQLite's tokenizer takes `scalar` for whitespace inside a run of it: space, tab,
    /// line feed, vertical tab, form feed or carriage return.
    private static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case " ", "\t", "\n", "\u{0B}", "\u{0C}", "\r": true
        default: false
        }
    }

    /// Whether `scalar` may be part of a bare SQLite identifier: an ASCII letter or digit, `_`,
    /// `$`, or any character outside ASCII.
    private static func isWordCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "_", "$": true
        default: !scalar.isASCII
        }
    }
}
