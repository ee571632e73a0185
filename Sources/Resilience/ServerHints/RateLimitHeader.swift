/// Parses the IETF RateLimit header fields, `RateLimit-Policy` and `RateLimit`
/// (draft-ietf-httpapi-ratelimit-headers), strictly, as RFC 9651 Structured Field Lists.
///
/// A server that publishes them tells a client how much quota is left before it
/// starts answering 429 Too Many Requests, and when the quota resets:
///
/// ```swift
/// let limits = RateLimitHeader.serviceLimits(parsing: #""default";r=0;t=10"#) ?? []
/// limits.first?.remaining                        // 0
/// RateLimitHeader.exhaustedFor(parsing: #""default";r=0;t=10"#)  // 10 seconds
/// ```
///
/// A field that is not a valid List is ignored whole (`nil`), as RFC 9651 asks.
/// Within a valid List, a member that is not a quota item (an inner list, a
/// value that is neither a String nor a Token, a missing or negative `q` or `r`,
/// a parameter of the wrong type) is skipped and the others kept. Parameters the
/// draft does not define are ignored. Numbers are RFC 9651 Integers (at most 15
/// digits), so no value can overflow.
///
/// The library reads the `RateLimit` field of an ``HTTPResponseError`` as a server
/// hint: when a quota it names is exhausted (`r=0`), the time to its reset (`t`)
/// becomes the failure's ``FailureAnalysis/retryAfter``. ``RateLimitGate`` honours
/// the fields of successful responses too, so a client can stay under the quota
/// instead of running into it.
public enum RateLimitHeader {
    /// The name of the field that states the server's quota policies.
    public static let policyFieldName = "RateLimit-Policy"
    /// The name of the field that states the quota left now.
    public static let fieldName = "RateLimit"

    /// One quota policy from a `RateLimit-Policy` field: how much quota a window holds.
    public struct Policy: Sendable, Hashable {
        /// The policy's name, the List member's String or Token.
        public var name: String
        /// `q`: the quota the policy allocates; zero or more.
        public var quota: Int64
        /// `qu`: the unit of the quota, such as `"request"`, if stated.
        public var quotaUnit: String?
        /// `w`: the window the quota applies to, if stated.
        public var window: Duration?
        /// `pk`: the partition key, as the base64 text the server sent, if stated.
        public var partitionKey: String?

        /// Creates a policy.
        public init(
            name: String, quota: Int64, quotaUnit: String? = nil, window: Duration? = nil, partitionKey: String? = nil
        ) {
            self.name = name
            self.quota = quota
            self.quotaUnit = quotaUnit
            self.window = window
            self.partitionKey = partitionKey
        }
    }

    /// One service limit from a `RateLimit` field: the quota left now.
    public struct ServiceLimit: Sendable, Hashable {
        /// The name of the policy this limit belongs to.
        public var policy: String
        /// `r`: the quota left; zero or more.
        ///
        /// A parsed field never holds a negative value (the member is skipped). One set by hand
        /// counts as zero, no quota left, wherever the package reads it
        /// (``RateLimitHeader/exhaustedFor(_:)``, ``RateLimitGate``).
        public var remaining: Int64
        /// `t`: the time until the quota resets, if stated.
        public var reset: Duration?
        /// `pk`: the partition key, as the base64 text the server sent, if stated.
        public var partitionKey: String?

        /// Creates a service limit.
        public init(policy: String, remaining: Int64, reset: Duration? = nil, partitionKey: String? = nil) {
            self.policy = policy
            self.remaining = remaining
            self.reset = reset
            self.partitionKey = partitionKey
        }
    }

    /// The policies of a `RateLimit-Policy` field value; `nil` when the field is malformed or empty.
    public static func policies(parsing value: some StringProtocol) -> [Policy]? {
        self.policies(utf8: Array(value.utf8))
    }

    /// The policies of a `RateLimit-Policy` field value given as raw bytes.
    public static func policies(utf8 value: some Collection<UInt8>) -> [Policy]? {
        guard let members = StructuredFieldParser.list(utf8: value), !members.isEmpty else { return nil }
        return members.compactMap { member in
            guard case .item(let item) = member, let name = self.name(of: item) else { return nil }
            guard case .integer(let quota)? = item.parameter("q"), quota >= 0 else { return nil }
            var policy = Policy(name: name, quota: quota)
            switch item.parameter("qu") {
            case nil: break
            case .string(let unit)?: policy.quotaUnit = unit
            default: return nil
            }
            switch item.parameter("w") {
            case nil: break
            case .integer(let seconds)? where seconds >= 0: policy.window = .seconds(seconds)
            default: return nil
            }
            guard self.readPartitionKey(of: item, into: &policy.partitionKey) else { return nil }
            return policy
        }
    }

    /// The service limits of a `RateLimit` field value; `nil` when the field is malformed or empty.
    public static func serviceLimits(parsing value: some StringProtocol) -> [ServiceLimit]? {
        self.serviceLimits(utf8: Array(value.utf8))
    }

    /// The service limits of a `RateLimit` field value given as raw bytes.
    public static func serviceLimits(utf8 value: some Collection<UInt8>) -> [ServiceLimit]? {
        guard let members = StructuredFieldParser.list(utf8: value), !members.isEmpty else { return nil }
        return members.compactMap { member in
            guard case .item(let item) = member, let name = self.name(of: item) else { return nil }
            guard case .integer(let remaining)? = item.parameter("r"), remaining >= 0 else { return nil }
            var limit = ServiceLimit(policy: name, remaining: remaining)
            switch item.parameter("t") {
            case nil: break
            case .integer(let seconds)? where seconds >= 0: limit.reset = .seconds(seconds)
            default: return nil
            }
            guard self.readPartitionKey(of: item, into: &limit.partitionKey) else { return nil }
            return limit
        }
    }

    /// How long the server asks the client to wait, from a `RateLimit` field value:
    /// the longest reset among the limits with no quota left, or `nil` when every
    /// limit has quota left, none states its reset, or the field is malformed.
    public static func exhaustedFor(parsing value: some StringProtocol) -> Duration? {
        self.serviceLimits(parsing: value).flatMap(self.exhaustedFor)
    }

    /// The longest reset among `limits` with no quota left (a negative `remaining` counts as
    /// none left), or `nil`; clamped, as every hint is, to about 146 years (which any
    /// policy's `maximumRetryAfter` then refuses).
    public static func exhaustedFor(_ limits: [ServiceLimit]) -> Duration? {
        limits.filter { $0.remaining <= 0 }.compactMap(\.reset).max()?.clampedToResilienceRange
    }

    private static func name(of item: StructuredFieldParser.Item) -> String? {
        switch item.value {
        case .string(let name), .token(let name): name
        default: nil
        }
    }

    /// Reads `pk`; `false` when it is present with the wrong type.
    private static func readPartitionKey(of item: StructuredFieldParser.Item, into key: inout String?) -> Bool {
        switch item.parameter("pk") {
        case nil: return true
        case .byteSequence(let text)?:
            key = text
            return true
        default: return false
        }
    }
}
