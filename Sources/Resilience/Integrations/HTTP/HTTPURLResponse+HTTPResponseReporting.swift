// On Apple platforms `HTTPURLResponse` is Foundation's, and the core can adopt the protocol
// for it. On Linux it lives in FoundationNetworking, which the core does not link:
// `ResilienceURLSession` adopts it there.
#if !canImport(FoundationNetworking)
    public import Foundation

    extension HTTPURLResponse: HTTPResponseReporting {}
#endif
