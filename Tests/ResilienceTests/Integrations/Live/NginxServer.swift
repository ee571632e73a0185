import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A real nginx, started by a test on a free port of 127.0.0.1, with its own
/// prefix directory, configuration, logs and pid file in a temporary folder.
///
/// Locations:
/// - `/ok` answers 200.
/// - `/maintenance` answers 503 with `Retry-After: 1` until ``recover()`` is
///   called, then 200 (`if (!-f flag)` in the configuration).
/// - `/limited` is limited by nginx's own `limit_req` to one request a minute;
///   the excess answers 429 with `Retry-After: 30`.
///
/// Requests are counted from nginx's access log (``loggedRequests()``), never
/// from the client.
///
/// nginx runs as a single process (`master_process off`) under
/// `Fixtures/supervise.py`, which kills it when the test closes the
/// supervisor's standard input, or when the test process dies.
final class NginxServer {
    /// The nginx binary, if installed.
    static let executable = LiveServerSupport.executable(
        named: "nginx", extraDirectories: ["/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin"])

    /// Whether the tests can use nginx here, or must fail trying (in CI, where it is installed).
    static var canRun: Bool {
        (Self.executable != nil && ScriptedHTTPServer.python != nil) || LiveServerSupport.isCI
    }

    /// The supervisor script, found next to this file.
    static let supervisor = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/supervise.py")

    let port: Int
    private let prefix: URL
    private let process: Process
    private let input: Pipe
    private let session = LiveServerSupport.makeSession()

    private init(port: Int, prefix: URL, process: Process, input: Pipe) {
        self.port = port
        self.prefix = prefix
        self.process = process
        self.input = input
    }

    /// Starts nginx and returns once it accepts connections.
    ///
    /// nginx cannot take a port the system picks, so it is given one that was free a
    /// moment ago; a server started in parallel can take that port first. nginx then
    /// fails to bind it, and this tries again on another port, up to three times.
    static func start() async throws -> NginxServer {
        var attempt = 1
        while true {
            do {
                return try await Self.startOnce()
            } catch LiveServerError.portTaken where attempt < 3 {
                attempt += 1
            }
        }
    }

    private static func startOnce() async throws -> NginxServer {
        guard let executable = Self.executable else {
            throw LiveServerError.notInstalled("nginx (.ci/steps/15-integration-deps.sh installs it)")
        }
        guard let python = ScriptedHTTPServer.python else { throw LiveServerError.notInstalled("python3") }
        let prefix = try LiveServerSupport.makeTemporaryDirectory(prefix: "resilience-nginx")
        let html = prefix.appendingPathComponent("html", isDirectory: true)
        try FileManager.default.createDirectory(at: html, withIntermediateDirectories: true)
        try Data("limited ok\n".utf8).write(to: html.appendingPathComponent("limited.txt"))
        let port = try LiveServerSupport.freeLoopbackPort()
        let configuration = prefix.appendingPathComponent("nginx.conf")
        try Data(Self.configuration(prefix: prefix.path, port: port).utf8).write(to: configuration)

        let process = Process()
        let input = Pipe()
        process.executableURL = python
        process.arguments = [
            Self.supervisor.path, "--ready-port", String(port),
            "--ready-file", prefix.appendingPathComponent("nginx.pid").path, executable.path,
            "-p", prefix.path + "/", "-c", configuration.path, "-e", prefix.appendingPathComponent("error.log").path,
        ]
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = NginxServer(port: port, prefix: prefix, process: process, input: input)
        // Once nginx has written its pid file (after binding its port), the supervisor probes
        // the port and says when nginx is listening, or that it exited or gave up after 20 s.
        let readiness = await LiveServerSupport.readLine(from: output.fileHandleForReading)
        if readiness != "ready" {
            let log = (try? String(contentsOf: prefix.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
            server.stop()
            if log.contains("Address already in use") { throw LiveServerError.portTaken(port) }
            throw LiveServerError.failedToStart("nginx: \(log)")
        }
        return server
    }

    /// The URL of `path` on this server.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(self.port)\(path)")!
    }

    /// Makes `/maintenance` answer 200 from now on.
    func recover() throws {
        try Data().write(to: self.prefix.appendingPathComponent("recovered"))
    }

    /// Every request nginx has served so far, as `METHOD URI STATUS` lines from its access log.
    ///
    /// First sends a marker request and waits for its answer. nginx runs as one
    /// process, and writes a request's log line before it reads the next
    /// request, so every request answered before the marker is in the log.
    func loggedRequests() async throws -> [String] {
        let marker = "/_mark?\(UUID().uuidString)"
        _ = try await self.session.data(for: LiveServerSupport.request(self.url(marker)))
        let log = try String(contentsOf: self.prefix.appendingPathComponent("access.log"), encoding: .utf8)
        return log.split(separator: "\n").map(String.init).filter { !$0.contains("/_mark?") }
    }

    /// The logged requests for `path`, as `METHOD URI STATUS` lines.
    func loggedRequests(for path: String) async throws -> [String] {
        try await self.loggedRequests().filter { $0.split(separator: " ").dropFirst().first == Substring(path) }
    }

    /// Stops nginx, and removes its files once it has exited (on a thread of its own: see
    /// `LiveServerSupport.reapInBackground(_:then:)`).
    func stop() {
        self.session.invalidateAndCancel()
        try? self.input.fileHandleForWriting.close()
        let prefix = self.prefix
        LiveServerSupport.reapInBackground(self.process) { try? FileManager.default.removeItem(at: prefix) }
    }

    private static func configuration(prefix: String, port: Int) -> String {
        """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(prefix)/nginx.pid;
        error_log \(prefix)/error.log warn;
        events { worker_connections 64; }
        http {
            log_format counting '$request_method $request_uri $status';
            access_log \(prefix)/access.log counting;
            client_body_temp_path \(prefix)/body;
            proxy_temp_path \(prefix)/proxy;
            fastcgi_temp_path \(prefix)/fastcgi;
            uwsgi_temp_path \(prefix)/uwsgi;
            scgi_temp_path \(prefix)/scgi;
            default_type text/plain;
            limit_req_zone $binary_remote_addr zone=perclient:1m rate=1r/m;
            server {
                listen 127.0.0.1:\(port);
                root \(prefix)/html;
                location = /ok { return 200 "ok\\n"; }
                location = /maintenance {
                    if (!-f \(prefix)/recovered) {
                        add_header Retry-After 1 always;
                        return 503 "down for maintenance\\n";
                    }
                    return 200 "back\\n";
                }
                location = /limited {
                    limit_req zone=perclient nodelay;
                    limit_req_status 429;
                    add_header Retry-After 30 always;
                    try_files /limited.txt =404;
                }
                location = /_mark { return 204; }
            }
        }
        """
    }
}
