import Foundation

/// A type whose values can neither be nor hold an error: the error chain's
/// reflection passes over such a value, or a whole collection of them, without
/// looking inside.
///
/// The conformances below are the library's own list of leaf types (numbers,
/// text, dates, data, URLs) and the optionals and collections made of them; the
/// reflection proves the same of an app's structures and tuples from their
/// stored values (see ``ErrorChain``).
protocol ErrorFreeValue {}

extension Bool: ErrorFreeValue {}
extension Int: ErrorFreeValue {}
extension Int8: ErrorFreeValue {}
extension Int16: ErrorFreeValue {}
extension Int32: ErrorFreeValue {}
extension Int64: ErrorFreeValue {}
extension UInt: ErrorFreeValue {}
extension UInt8: ErrorFreeValue {}
extension UInt16: ErrorFreeValue {}
extension UInt32: ErrorFreeValue {}
extension UInt64: ErrorFreeValue {}
extension Double: ErrorFreeValue {}
extension Float: ErrorFreeValue {}
extension Duration: ErrorFreeValue {}
extension String: ErrorFreeValue {}
extension Substring: ErrorFreeValue {}
extension Character: ErrorFreeValue {}
extension Unicode.Scalar: ErrorFreeValue {}
extension Data: ErrorFreeValue {}
extension Date: ErrorFreeValue {}
extension URL: ErrorFreeValue {}
extension UUID: ErrorFreeValue {}
extension Decimal: ErrorFreeValue {}
// A request's idempotency: a flag and a method's name.
extension Idempotency: ErrorFreeValue {}
// How far a request got: a name, kept by `HTTPResponseError.recordedDelivery`.
extension RequestDelivery: ErrorFreeValue {}
// When a library time limit ended a call: a clock and two times, kept by the library's errors.
extension TimeLimitEnd: ErrorFreeValue {}
extension Optional: ErrorFreeValue where Wrapped: ErrorFreeValue {}
extension Array: ErrorFreeValue where Element: ErrorFreeValue {}
extension ArraySlice: ErrorFreeValue where Element: ErrorFreeValue {}
extension ContiguousArray: ErrorFreeValue where Element: ErrorFreeValue {}
extension Set: ErrorFreeValue where Element: ErrorFreeValue {}
extension Dictionary: ErrorFreeValue where Key: ErrorFreeValue, Value: ErrorFreeValue {}
