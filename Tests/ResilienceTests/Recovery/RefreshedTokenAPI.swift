import Resilience

/// The API the credential-refresh tests call: it answers only a request carrying the refreshed
/// token, `"new"`, and refuses any other with a 401.
enum RefreshedTokenAPI {
    static let operation: @Sendable (String) async throws -> String = { token in
        guard token == "new" else { throw HTTPResponseError(statusCode: 401) }
        return "profile"
    }
}
