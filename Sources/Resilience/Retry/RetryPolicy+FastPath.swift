/// The hook that lets ``RetryPolicy``'s success path inline into the caller's module.
///
/// Not for conformance by other types: ``RetryPolicy`` is its only conformer.
///
/// Swift 6.3 does not inline an actor's own instance methods into other modules,
/// even when they are `@inlinable` and take an `isolated` parameter; each call
/// then pays an executor switch of about 70 ns. A method declared in a protocol
/// extension constrained to `Self == RetryPolicy` is inlined and specialized like
/// any other generic function, so ``RetryPolicy/execute(isolation:operation:)``
/// lives here. Callers see no difference: they write `policy.execute { ... }`.
/// The benchmark executable's `retry.success` row measures the result.
public protocol _RetryPolicyFastPath: Actor {}

extension RetryPolicy: _RetryPolicyFastPath {}

extension _RetryPolicyFastPath where Self == RetryPolicy {
    /// Runs `operation`, retrying its failures as the policy allows.
    ///
    /// - Parameters:
    ///   - isolation: The actor the operation runs on; inferred from the caller.
    ///   - operation: The work to attempt. It runs in the caller's isolation.
    /// - Returns: The operation's value from the first attempt that succeeds.
    /// - Throws: The error of the last attempt, unchanged, or `CancellationError` when
    ///   the task was cancelled while waiting to retry.
    @inlinable
    public func execute<Value>(
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> Value
    ) async throws -> Value {
        // The fast path is kept tiny so that it inlines and specializes into the caller:
        // one flag test, the cancellation check, the operation, and a budget refund.
        // Everything else lives in `retry(isolation:firstFailure:operation:)`.
        guard self.canTakeFastPath else {
            return try await self.retry(isolation: isolation, firstFailure: nil, operation: operation)
        }
        let value: Value
        do {
            value = try await operation()
        } catch {
            return try await self.retry(isolation: isolation, firstFailure: error, operation: operation)
        }
        self.budget?.recordSuccess()
        return value
    }
}
