import Foundation
import Resilience
import Testing

@Suite struct URLErrorCategoryTests {
    @Test(arguments: [
        URLError.Code.cannotFindHost, .cannotConnectToHost, .dnsLookupFailed, .notConnectedToInternet,
        .internationalRoamingOff, .callIsActive, .dataNotAllowed,
    ])
    func connectionFailuresMeanTheRequestWasNotSent(code: URLError.Code) {
        #expect(URLErrorCategory(code: code) == .requestNotSent)
        #expect(URLErrorCategory(code: code).isTransient)
    }

    @Test(arguments: [
        URLError.Code.timedOut, .networkConnectionLost, .badServerResponse, .cannotParseResponse,
        .zeroByteResource, .backgroundSessionWasDisconnected,
        // FoundationNetworking's code for a response cut short in its body.
        .unknown,
    ])
    func midFlightFailuresMeanTheRequestMayHaveBeenSent(code: URLError.Code) {
        #expect(URLErrorCategory(code: code) == .requestMayHaveBeenSent)
        #expect(URLErrorCategory(code: code).isTransient)
    }

    @Test(arguments: [URLError.Code.userAuthenticationRequired, .userCancelledAuthentication])
    func credentialFailuresNeedAuthentication(code: URLError.Code) {
        #expect(URLErrorCategory(code: code) == .authenticationRequired)
        #expect(!URLErrorCategory(code: code).isTransient)
    }

    @Test(arguments: [
        URLError.Code.badURL, .unsupportedURL, .cancelled, .serverCertificateUntrusted,
        .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid,
        .clientCertificateRejected, .clientCertificateRequired, .secureConnectionFailed,
        .httpTooManyRedirects, .redirectToNonExistentLocation, .fileDoesNotExist,
        .appTransportSecurityRequiresSecureConnection, .dataLengthExceedsMaximum,
    ])
    func everythingElseIsPermanent(code: URLError.Code) {
        #expect(URLErrorCategory(code: code) == .permanent)
        #expect(!URLErrorCategory(code: code).isTransient)
    }

    @Test func recognizesURLErrorsAndNSErrorsInTheURLDomain() {
        #expect(URLErrorCategory(URLError(.timedOut)) == .requestMayHaveBeenSent)
        let bridged = NSError(domain: NSURLErrorDomain, code: URLError.Code.cannotConnectToHost.rawValue)
        #expect(URLErrorCategory(bridged) == .requestNotSent)
    }

    @Test func findsAURLErrorUnderAnotherError() {
        let wrapper = NSError(
            domain: "SDKErrorDomain", code: 9,
            userInfo: [NSUnderlyingErrorKey: NSError(domain: NSURLErrorDomain, code: URLError.Code.timedOut.rawValue)])
        #expect(URLErrorCategory(wrapper) == .requestMayHaveBeenSent)
    }

    @Test func otherErrorsHaveNoCategory() {
        struct Unrelated: Error {}
        #expect(URLErrorCategory(Unrelated()) == nil)
        #expect(URLErrorCategory(CancellationError()) == nil)
        #expect(URLErrorCategory(NSError(domain: "Other", code: -1001)) == nil)
    }

    /// A `URLError` whose code says the request never left, but whose `userInfo` records that
    /// it may have (as the HTTP helpers do after a redirect): the record wins, so a request
    /// that is not idempotent is not sent again; one that is may be.
    @Test(arguments: [URLError.Code.cannotConnectToHost, .cannotFindHost, .notConnectedToInternet])
    func aRecordedDeliveryOutweighsANotSentCode(code: URLError.Code) {
        let error = URLError(code, userInfo: [ErrorHints.requestDeliveryKey: RequestDelivery.mayHaveBeenSent])
        let analysis = FailureAnalysis(error)
        #expect(URLErrorCategory(error) == .requestNotSent)
        #expect(analysis.delivery == .mayHaveBeenSent)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == .notIdempotent)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .idempotent) == nil)
        #expect(Rulebook.stopReason(for: FailureAnalysis(URLError(code)), idempotency: .notIdempotent) == nil)
        let bridged = NSError(
            domain: NSURLErrorDomain, code: code.rawValue,
            userInfo: [ErrorHints.requestDeliveryKey: RequestDelivery.mayHaveBeenSent])
        #expect(FailureAnalysis(bridged).delivery == .mayHaveBeenSent)
    }
}
