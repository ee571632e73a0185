/// The settings of a ``RetryPolicy`` that describe its behaviour, validated once.
///
/// A configuration is a value: validate it where the settings come in (a file,
/// the environment, a remote config service) and build policies from it with
/// ``RetryPolicy/init(name:configuration:classifier:budget:observer:nestedRetries:throttle:clock:generator:)``,
/// which cannot fail and so does not throw. ``default`` holds the package's
/// defaults, so a default policy needs no `try`:
///
/// ```swift
/// let policy = RetryPolicy(name: "profile", configuration: .default)
///
/// let patient = try RetryPolicyConfiguration(maximumAttempts: 6, deadline: .seconds(30))
/// let search = RetryPolicy(name: "search", configuration: patient)
/// ```
///
/// The parts that are code rather than settings (the classifier, a shared
/// budget, the observer, the clock and the generator) are given to the policy
/// itself. A configuration is `Codable`; see <doc:SettingsFromJSONAndTheEnvironment>
/// for its encoded form.
public struct RetryPolicyConfiguration: Sendable, Hashable {
    /// The most attempts a call makes, counting the first.
    public let maximumAttempts: Int
    /// The delay schedule before jitter.
    public let backoff: Backoff
    /// The randomness added to each delay.
    public let jitter: Jitter
    /// The most time a call may take across all attempts and waits, if limited.
    public let deadline: Duration?
    /// The longest server-requested wait the policy will honour; a longer hint stops the call.
    public let maximumRetryAfter: Duration

    /// Creates a configuration, validating every setting.
    ///
    /// A `deadline` or `maximumRetryAfter` beyond the package's longest duration (about 146
    /// years) is kept here as given; a policy made from the configuration counts it as that
    /// longest (see ``RetryPolicy/deadline``), as it counts a ``Backoff`` delay.
    ///
    /// - Parameters:
    ///   - maximumAttempts: Attempts per call, counting the first; at least 1. Defaults to 3.
    ///   - backoff: The delay schedule; defaults to ``Backoff/default``.
    ///   - jitter: The randomness on each delay; defaults to ``Jitter/full``.
    ///   - deadline: A limit on the whole call, attempts and waits included; greater than zero,
    ///     or `nil` (the default) for none.
    ///   - maximumRetryAfter: The longest server hint honoured; zero or more. Defaults to 60 s.
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public init(
        maximumAttempts: Int = 3,
        backoff: Backoff = .default,
        jitter: Jitter = .default,
        deadline: Duration? = nil,
        maximumRetryAfter: Duration = .seconds(60)
    ) throws(ConfigurationError) {
        try ConfigurationError.require(maximumAttempts >= 1, "maximumAttempts", maximumAttempts, "in 1...Int.max")
        try backoff.validate()
        try jitter.validate()
        if let deadline {
            try ConfigurationError.requirePositive(deadline, "deadline")
        }
        try ConfigurationError.requireNonNegative(maximumRetryAfter, "maximumRetryAfter")
        self.init(
            uncheckedMaximumAttempts: maximumAttempts, backoff: backoff, jitter: jitter, deadline: deadline,
            maximumRetryAfter: maximumRetryAfter)
    }

    /// Creates a configuration from settings already known to be valid.
    init(
        uncheckedMaximumAttempts maximumAttempts: Int,
        backoff: Backoff,
        jitter: Jitter,
        deadline: Duration?,
        maximumRetryAfter: Duration
    ) {
        self.maximumAttempts = maximumAttempts
        self.backoff = backoff
        self.jitter = jitter
        self.deadline = deadline
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The package defaults: three attempts, ``Backoff/default``, ``Jitter/full``,
    /// no deadline, and server hints honoured up to 60 seconds.
    public static let `default` = RetryPolicyConfiguration(
        uncheckedMaximumAttempts: 3, backoff: .default, jitter: .default, deadline: nil,
        maximumRetryAfter: .seconds(60))
}
