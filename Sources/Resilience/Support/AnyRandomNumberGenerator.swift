/// A random number generator of any type, stored by value.
package struct AnyRandomNumberGenerator: RandomNumberGenerator, Sendable {
    private var base: any RandomNumberGenerator & Sendable

    /// Wraps `base`.
    package init(_ base: some RandomNumberGenerator & Sendable) {
        self.base = base
    }

    /// The next 64 random bits from the wrapped generator.
    package mutating func next() -> UInt64 {
        self.base.next()
    }
}
