extension HTTPResponseError {
    /// The service limits of the response's `RateLimit` field; empty when absent or malformed.
    public var serviceLimits: [RateLimitHeader.ServiceLimit] {
        self.headerValue(named: RateLimitHeader.fieldName).flatMap { RateLimitHeader.serviceLimits(parsing: $0) } ?? []
    }

    /// The quota policies of the response's `RateLimit-Policy` field; empty when absent or malformed.
    public var rateLimitPolicies: [RateLimitHeader.Policy] {
        self.headerValue(named: RateLimitHeader.policyFieldName).flatMap { RateLimitHeader.policies(parsing: $0) }
            ?? []
    }
}
