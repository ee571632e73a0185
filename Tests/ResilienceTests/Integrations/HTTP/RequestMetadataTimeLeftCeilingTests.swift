import Foundation
import Resilience
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `RetryRequestHeaders.applied(to:attempt:timeLeft:)` is public and takes any duration: a time
/// left beyond the package's longest duration (about 146 years) counts as that longest, so the
/// header carries its milliseconds and the request keeps its own timeout. Checked in a child
/// process, where a trap fails the test instead of the run. The longest duration is
/// `Int64.max / 2_000_000_000` seconds: 4611686018000 ms.
@Suite("Request metadata headers: a time left beyond the longest duration", .timeLimit(.minutes(5)))
struct RequestMetadataTimeLeftCeilingTests {
    @Test func theGreatestTimeLeftIsSentAsTheLongestDuration() async {
        await #expect(processExitsWith: .success) {
            var request = URLRequest(url: URL(string: "https://example.com/items")!)
            request.timeoutInterval = 60
            let headers = RetryRequestHeaders(timeLeft: "X-Time-Left-Ms", attempt: "X-Attempt")
            let sent = headers.applied(to: request, attempt: 1, timeLeft: .seconds(Int64.max))
            guard sent.value(forHTTPHeaderField: "X-Time-Left-Ms") == "4611686018000",
                sent.value(forHTTPHeaderField: "X-Attempt") == "1", sent.timeoutInterval == 60
            else { exit(EXIT_FAILURE) }
        }
    }

    /// Just past `Int64.max / 1000` seconds, the first time left whose milliseconds do not fit
    /// in 64 bits.
    @Test func aTimeLeftWhoseMillisecondsOverflowIsSentAsTheLongestDuration() async {
        await #expect(processExitsWith: .success) {
            let request = URLRequest(url: URL(string: "https://example.com/items")!)
            let sent = RetryRequestHeaders(timeLeft: "T").applied(
                to: request, attempt: 1, timeLeft: .seconds(Int64.max / 1_000 + 1))
            guard sent.value(forHTTPHeaderField: "T") == "4611686018000",
                sent.timeoutInterval == request.timeoutInterval
            else { exit(EXIT_FAILURE) }
        }
    }

    /// Within the longest duration, but with more milliseconds than before: nothing is cut.
    @Test func aTimeLeftWithinTheLongestDurationIsSentExactly() {
        let request = URLRequest(url: URL(string: "https://example.com/items")!)
        let sent = RetryRequestHeaders(timeLeft: "T").applied(
            to: request, attempt: 1, timeLeft: .seconds(4_611_686_017) + .milliseconds(999))
        #expect(sent.value(forHTTPHeaderField: "T") == "4611686017999")
    }
}
