// A small program that uses only the core `Resilience` product, as a server
// would: CI builds it against this checkout and checks what it links.
import Resilience

struct Flaky: Error {}

let policy = RetryPolicy(name: "core-only", configuration: .default)
var calls = 0
let value = try await policy.execute {
    calls += 1
    if calls < 2 { throw Flaky() }
    return 42
}
print("core-only: \(value) after \(calls) attempts")
