import Foundation

/// Where and when a run happened, for the report's header.
struct RunEnvironment: Sendable {
    /// The compiler version, such as `6.3.1`.
    var swift: String
    /// CPU, core count, architecture, operating system and memory, in one line.
    var machine: String
    /// When the run started, ISO 8601 in UTC.
    var date: String
    /// `standard` or `quick`.
    var mode: String
    /// The simulations' seed.
    var seed: UInt64

    /// Describes this machine now.
    static func current(mode: String, seed: UInt64) -> RunEnvironment {
        let info = ProcessInfo.processInfo
        var parts: [String] = []
        if let cpu = Self.cpuModel() { parts.append(cpu) }
        parts.append("\(info.activeProcessorCount) cores")
        parts.append(Self.architecture())
        parts.append(Self.operatingSystem())
        parts.append("\(info.physicalMemory / 1_073_741_824) GB RAM")
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return RunEnvironment(
            swift: SwiftVersion.compiler,
            machine: parts.joined(separator: ", "),
            date: formatter.string(from: Date()),
            mode: mode,
            seed: seed)
    }

    private static func cpuModel() -> String? {
        #if os(Linux)
            guard let cpuinfo = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return nil }
            for line in cpuinfo.split(separator: "\n") where line.hasPrefix("model name") {
                if let colon = line.firstIndex(of: ":") {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        #elseif canImport(Darwin)
            var size = 0
            guard sysctlbyname("machdep.cpu.brand_string", nil, &size, nil, 0) == 0, size > 0 else { return nil }
            var buffer = [CChar](repeating: 0, count: size)
            guard sysctlbyname("machdep.cpu.brand_string", &buffer, &size, nil, 0) == 0 else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #else
            return nil
        #endif
    }

    private static func architecture() -> String {
        #if arch(x86_64)
            "x86_64"
        #elseif arch(arm64)
            "arm64"
        #else
            "unknown architecture"
        #endif
    }

    private static func operatingSystem() -> String {
        #if os(Linux)
            if let release = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8) {
                for line in release.split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
                    return String(line.dropFirst("PRETTY_NAME=".count)).trimmingCharacters(
                        in: CharacterSet(charactersIn: "\""))
                }
            }
            return "Linux"
        #else
            return ProcessInfo.processInfo.operatingSystemVersionString
        #endif
    }
}
