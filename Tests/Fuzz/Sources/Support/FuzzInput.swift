import Foundation

@testable import Resilience

/// A cursor that turns libFuzzer's bytes into structured values.
///
/// Running out of bytes is not an error: every read then returns zero, so every
/// input, however short, decodes to something. Numbers come half the time from a
/// table of edge values (NaN, infinities, signed zero, the largest and smallest
/// magnitudes, the package's maximum duration and its neighbours), because those
/// are where arithmetic breaks and random bit patterns rarely reach them.
struct FuzzInput {
    private var bytes: ArraySlice<UInt8>

    init(_ data: UnsafePointer<UInt8>, _ size: Int) {
        self.bytes = Array(UnsafeBufferPointer(start: data, count: size))[...]
    }

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
    }

    var isEmpty: Bool { self.bytes.isEmpty }

    /// Everything not read yet, consumed.
    mutating func rest() -> ArraySlice<UInt8> {
        defer { self.bytes = [] }
        return self.bytes
    }

    mutating func byte() -> UInt8 {
        self.bytes.popFirst() ?? 0
    }

    mutating func bool() -> Bool {
        self.byte() & 1 == 1
    }

    mutating func choice(_ count: Int) -> Int {
        Int(self.byte()) % count
    }

    mutating func uint64() -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 8) {
            value |= UInt64(self.byte()) << UInt64(shift)
        }
        return value
    }

    mutating func int() -> Int {
        if self.bool() { return Self.edgeIntegers[self.choice(Self.edgeIntegers.count)] }
        return Int(truncatingIfNeeded: self.uint64())
    }

    mutating func int64() -> Int64 {
        Int64(truncatingIfNeeded: self.int())
    }

    mutating func double() -> Double {
        if self.bool() { return Self.edgeDoubles[self.choice(Self.edgeDoubles.count)] }
        return Double(bitPattern: self.uint64())
    }

    mutating func duration() -> Duration {
        switch self.choice(4) {
        case 0: return Self.edgeDurations[self.choice(Self.edgeDurations.count)]
        case 1: return .seconds(self.int64())
        case 2: return .nanoseconds(self.int64())
        default:
            let attoseconds = Int64(truncatingIfNeeded: self.uint64()) % 1_000_000_000_000_000_000
            return Duration(secondsComponent: self.int64(), attosecondsComponent: attoseconds)
        }
    }

    /// A string of up to `maximumLength` bytes: random text, a number in some
    /// spelling, or a fragment a parser will recognize.
    mutating func string(maximumLength: Int = 40) -> String {
        switch self.choice(4) {
        case 0: return String(self.double())
        case 1: return " \(self.int())\t"
        case 2: return Self.fragments[self.choice(Self.fragments.count)]
        default:
            let length = Swift.min(self.choice(maximumLength + 1), self.bytes.count)
            let text = self.bytes.prefix(length)
            self.bytes.removeFirst(length)
            return String(decoding: text, as: UTF8.self)
        }
    }

    static let edgeIntegers: [Int] = [
        0, 1, -1, 99, 100, 428, 429, 430, 503, 599, 600, Int(Int32.max), Int(Int32.min), .max, .min, .max - 1,
        1_000_000_000, -1_000_000_000,
    ]

    static let edgeDoubles: [Double] = [
        .nan, -.nan, .signalingNaN, .infinity, -.infinity, 0, -0.0, 1, -1, 0.5, 1e-9, 4e-10, 6e-10,
        .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        Double(Int64.max), -Double(Int64.max), Double(Int.max).nextDown, 429, 503, 1e9, 1e18, 1e19, 1e300,
        Duration.resilienceMaximum.secondsValue, Duration.resilienceMaximum.secondsValue.nextDown,
        Duration.resilienceMaximum.secondsValue.nextUp, 0.001, 0.0015, 1_000_000, 1_000_000.5, 2, 1.000_000_1,
    ]

    static let edgeDurations: [Duration] = [
        .zero, .nanoseconds(1), .nanoseconds(-1), .seconds(1), .seconds(-1), .seconds(60), .seconds(Int64.max),
        .seconds(Int64.min), .resilienceMaximum, .resilienceMaximum + .nanoseconds(1),
        Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999),
        Duration(secondsComponent: .min, attosecondsComponent: -999_999_999_999_999_999),
        .milliseconds(100), .seconds(10),
    ]

    static let fragments: [String] = [
        "", " ", "429", "503", "120", "-1", "+5", "1.5", "1e308", "nan", "inf", "-inf", "0x1p3", " 7 ", "\t8",
        "99999999999999999999", "9223372036854775807", "Sun, 06 Nov 1994 08:49:37 GMT", "٣", "１２",
    ]
}

/// Stops the fuzzer with a message when an invariant fails; libFuzzer saves the input.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() {
        fatalError("invariant violated: \(message())")
    }
}
