import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Facts and helpers shared by the tests that drive real servers on 127.0.0.1.
enum LiveServerSupport {
    /// Whether the tests run in CI, where every real component must be installed
    /// (`.ci/steps/15-integration-deps.sh`): there a missing one fails the test instead of skipping it.
    static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty && $0 != "false" } ?? false

    /// The first executable called `name` on `PATH` or in `extraDirectories`.
    static func executable(named name: String, extraDirectories: [String] = []) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + extraDirectories
        for directory in directories {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }

    /// A fresh temporary directory for one server's files.
    static func makeTemporaryDirectory(prefix: String) throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// An ephemeral session with no cache, for one test.
    static func makeSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 5
        configuration.timeoutIntervalForResource = 10
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }

    /// A request bounded by a short timeout.
    ///
    /// Two quirks of FoundationNetworking on Linux (Swift 6.3) shape this: it
    /// honours `timeoutInterval` only when set as a property (the value passed to
    /// `URLRequest(url:cachePolicy:timeoutInterval:)` is ignored), and it counts
    /// it in whole seconds (under one second times out at once). So the timeout is
    /// set as a property, and one second is the shortest bound.
    static func request(_ url: URL, method: String = "GET", timeout: TimeInterval = 2) -> URLRequest {
        var request = URLRequest(url: url)
        request.cachePolicy = .reloadIgnoringLocalCacheData
        request.timeoutInterval = timeout
        request.httpMethod = method
        if method == "POST" { request.httpBody = Data("order=42".utf8) }
        return request
    }

    // MARK: - Ports

    /// A TCP port on 127.0.0.1 that was free a moment ago.
    ///
    /// Only a moment: another server started in parallel (another test, another process)
    /// may take it before the caller binds it. ``NginxServer/start()`` tries again on a
    /// new port when that happens.
    static func freeLoopbackPort() throws -> Int {
        let socket = try LoopbackSocket()
        defer { socket.close() }
        guard socket.bind(port: 0) else { throw LiveServerError.noFreePort }
        return socket.boundPort
    }

    /// Runs `body` with a port of 127.0.0.1 on which nothing listens and nothing can
    /// start listening until `body` returns: the port stays bound to a socket that never
    /// listens, so a connection to it is refused, and a server started in parallel
    /// cannot take it (as it could take a port that was only free a moment ago).
    static func withRefusingLoopbackPort<T>(_ body: (Int) async throws -> T) async throws -> T {
        let socket = try LoopbackSocket()
        defer { socket.close() }
        guard socket.bind(port: 0) else { throw LiveServerError.noFreePort }
        return try await body(socket.boundPort)
    }

    /// Waits for `process` to exit on a thread of its own, then runs `cleanup`, and returns at
    /// once. A test's thread must not wait for it: on Linux `Process` learns of the exit through
    /// a handler that runs on the same shared pool, so two tests waiting on two cores blocked
    /// every thread that could run it, and the whole test run hung.
    static func reapInBackground(_ process: Process, then cleanup: (@Sendable () -> Void)? = nil) {
        Thread {
            process.waitUntilExit()
            cleanup?()
        }.start()
    }

    /// Reads one line from `handle` without blocking a task's thread.
    static func readLine(from handle: FileHandle) async -> String {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var bytes: [UInt8] = []
                while true {
                    let chunk = handle.readData(ofLength: 1)
                    guard let byte = chunk.first, byte != UInt8(ascii: "\n") else { break }
                    bytes.append(byte)
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
    }
}

/// Why a real server could not be used.
enum LiveServerError: Error, CustomStringConvertible {
    case notInstalled(String)
    case noFreePort
    /// Another server took the port between the moment it was free and the server's bind.
    case portTaken(Int)
    case failedToStart(String)

    var description: String {
        switch self {
        case .notInstalled(let what): "\(what) is not installed"
        case .noFreePort: "no free port on 127.0.0.1"
        case .portTaken(let port): "port \(port) of 127.0.0.1 was taken before the server could bind it"
        case .failedToStart(let why): "server failed to start: \(why)"
        }
    }
}

/// A TCP socket on the loopback interface, for finding free ports.
private struct LoopbackSocket {
    let descriptor: Int32

    init() throws {
        #if canImport(Glibc)
            self.descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            self.descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard self.descriptor >= 0 else { throw LiveServerError.noFreePort }
    }

    private func address(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    func bind(port: Int) -> Bool {
        var address = self.address(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                #if canImport(Glibc)
                    Glibc.bind(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #else
                    Darwin.bind(self.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                #endif
            }
        }
        return result == 0
    }

    var boundPort: Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(self.descriptor, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        #if canImport(Glibc)
            _ = Glibc.close(self.descriptor)
        #else
            _ = Darwin.close(self.descriptor)
        #endif
    }
}
