// On Linux `HTTPURLResponse` lives in FoundationNetworking, which the core does not link,
// so this module adopts the core's protocol for it; on Apple platforms the core does.
#if canImport(FoundationNetworking)
    public import FoundationNetworking
    public import Resilience

    extension HTTPURLResponse: HTTPResponseReporting {}
#endif
