import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The scripted Python server in `Fixtures/scripted_server.py`, started by a
/// test on a free port of 127.0.0.1: it fails in the sequences a test asks for
/// (fail N times, drop the connection, answer too slowly) and counts requests on
/// its side, exposed at `/_count/KEY`, with the bodies it received at `/_bodies/KEY`.
final class ScriptedHTTPServer {
    /// The Python interpreter, if installed.
    static let python = LiveServerSupport.executable(
        named: "python3", extraDirectories: ["/usr/bin", "/usr/local/bin"])

    /// Whether the tests can use the server here, or must fail trying (in CI).
    static var canRun: Bool { Self.python != nil || LiveServerSupport.isCI }

    /// The script, found next to this file.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/scripted_server.py")

    let port: Int
    private let process: Process
    private let input: Pipe
    private let session = LiveServerSupport.makeSession()

    private init(port: Int, process: Process, input: Pipe) {
        self.port = port
        self.process = process
        self.input = input
    }

    /// Starts the server and returns once it listens (it prints its port when it does).
    static func start() async throws -> ScriptedHTTPServer {
        guard let python = Self.python else { throw LiveServerError.notInstalled("python3") }
        let process = Process()
        let input = Pipe()
        let output = Pipe()
        process.executableURL = python
        process.arguments = [Self.script.path]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let line = await LiveServerSupport.readLine(from: output.fileHandleForReading)
        guard let port = Int(line) else {
            try? input.fileHandleForWriting.close()
            LiveServerSupport.reapInBackground(process)
            throw LiveServerError.failedToStart("scripted_server.py printed \(line.debugDescription)")
        }
        return ScriptedHTTPServer(port: port, process: process, input: input)
    }

    /// The URL of `path` on this server.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(self.port)\(path)")!
    }

    /// How many requests the server has received for `key`, by its own count.
    func requestCount(for key: String) async throws -> Int {
        let (data, _) = try await self.session.data(for: LiveServerSupport.request(self.url("/_count/\(key)")))
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let count = Int(text) else { throw LiveServerError.failedToStart("bad count \(text.debugDescription)") }
        return count
    }

    /// The bodies of the requests the server has received for `key`, in order (one per
    /// line on the wire, so a body must not hold a line break).
    func bodies(for key: String) async throws -> [String] {
        let (data, _) = try await self.session.data(for: LiveServerSupport.request(self.url("/_bodies/\(key)")))
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .dropLast().map(String.init)
    }

    /// Stops the server: it exits when its standard input closes (see
    /// `LiveServerSupport.reapInBackground(_:then:)` for why nothing waits for that here).
    func stop() {
        self.session.invalidateAndCancel()
        try? self.input.fileHandleForWriting.close()
        LiveServerSupport.reapInBackground(self.process)
    }
}
