/// The median and spread of repeated measurements.
struct Summary: Sendable {
    /// The middle value (the mean of the two middle values for an even count).
    var median: Double
    /// The smallest value.
    var minimum: Double
    /// The largest value.
    var maximum: Double

    /// Summarizes `values`, which must not be empty.
    init(_ values: [Double]) {
        precondition(!values.isEmpty, "a summary needs at least one value")
        let sorted = values.sorted()
        let middle = sorted.count / 2
        self.median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        self.minimum = sorted[0]
        self.maximum = sorted[sorted.count - 1]
    }

    /// A summary of a single value.
    init(single value: Double) {
        self.median = value
        self.minimum = value
        self.maximum = value
    }
}

extension Duration {
    /// The duration in nanoseconds, as a floating-point number.
    var nanoseconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
    }

    /// The duration in milliseconds, as a floating-point number.
    var milliseconds: Double {
        self.nanoseconds / 1e6
    }
}
