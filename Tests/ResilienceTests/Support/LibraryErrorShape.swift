import Foundation
import Resilience

/// The shapes in which one of the library's own errors reaches a layer above: as thrown,
/// inside an app's enum (found by reflection), under an `NSError`'s `NSUnderlyingErrorKey`,
/// bridged with `as NSError`, and two levels deep.
enum LibraryErrorShape: CaseIterable, Sendable, CustomStringConvertible {
    case direct
    case appEnum
    case nsUnderlying
    case bridged
    /// An app's enum inside an `NSError`'s `NSUnderlyingErrorKey`.
    case appEnumUnderNSError
    /// The bridged error inside an app's enum.
    case bridgedInAppEnum

    /// Every shape but the error as thrown.
    static let wrapped = allCases.filter { $0 != .direct }

    /// Whether the shape bridges the error to `NSError`, which keeps only the domain, code and
    /// `userInfo` of an error that is not the library's on Linux (the library reads its own back).
    var bridges: Bool { self == .bridged || self == .bridgedInAppEnum }

    func wrap(_ error: any Error) -> any Error {
        switch self {
        case .direct:
            error
        case .appEnum:
            SilentAppError.transport(error)
        case .nsUnderlying:
            NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])
        case .bridged:
            error as NSError
        case .appEnumUnderNSError:
            NSError(domain: "App", code: 2, userInfo: [NSUnderlyingErrorKey: SilentAppError.transport(error)])
        case .bridgedInAppEnum:
            SilentAppError.server(code: 7, cause: error as NSError)
        }
    }

    var description: String {
        switch self {
        case .direct: "direct"
        case .appEnum: "appEnum"
        case .nsUnderlying: "nsUnderlying"
        case .bridged: "bridged"
        case .appEnumUnderNSError: "appEnumUnderNSError"
        case .bridgedInAppEnum: "bridgedInAppEnum"
        }
    }
}
