import Foundation

/// The process's resident memory, read from `/proc/self/status` (Linux only).
enum ResidentMemory {
    /// `VmRSS` in bytes, or `nil` where `/proc/self/status` does not exist.
    static func current() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            // "VmRSS:	   12345 kB"
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let kilobytes = Int(fields[1]) else { return nil }
            return kilobytes * 1_024
        }
        return nil
    }
}
