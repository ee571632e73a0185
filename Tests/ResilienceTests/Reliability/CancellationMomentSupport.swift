import Testing

/// Yields until `condition` holds; records an issue and returns after 200,000 yields, so a
/// condition that never comes fails the test instead of hanging it.
func yieldUntil(_ what: String, _ condition: () -> Bool) async {
    var spins = 0
    while !condition() {
        spins += 1
        if spins > 200_000 {
            Issue.record("never: \(what)")
            return
        }
        await Task.yield()
    }
}
