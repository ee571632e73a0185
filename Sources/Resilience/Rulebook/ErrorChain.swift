import Foundation

/// Walks an error and the errors it wraps, outermost first.
///
/// The errors below one are, in order: those it names through
/// ``UnderlyingErrorProviding`` (which then replaces every other way); the
/// `NSUnderlyingErrorKey` and `NSMultipleUnderlyingErrorsKey` entries of its
/// `userInfo`; a CloudKit partial failure's per-item errors; and, for a Swift
/// value that adopts none of these, the errors found by reflecting on its stored
/// values (an enum case's payload, a struct's properties, the elements of an
/// array or dictionary), a few levels into each.
///
/// The walk is bounded in depth, in the number of errors visited and in the
/// number of stored values reflection looks at, so a cyclic or enormous structure
/// costs a fixed amount; it runs on failure paths only. The bounds are wide enough
/// for a batch of hundreds of items: a 429 from its last item must still be seen.
enum ErrorChain {
    /// How many wrappers deep the walk goes.
    static let maximumDepth = 8
    /// How many errors it visits at most.
    static let maximumErrors = 1_024
    /// How many levels of stored values reflection looks through within one error.
    static let maximumReflectionDepth = 3
    /// How many stored values reflection looks at in all, over the whole walk.
    static let maximumReflectedValues = 1_024

    /// Calls `visit` for `error` and each error below it, outermost first, until it returns `false`.
    static func walk(_ error: any Error, _ visit: (any Error) -> Bool) {
        var queue: [(error: any Error, depth: Int)] = [(error, 0)]
        var index = 0
        var reflectionBudget = Self.maximumReflectedValues
        while index < queue.count, index < Self.maximumErrors {
            let (current, depth) = queue[index]
            index += 1
            guard visit(current) else { return }
            guard depth < Self.maximumDepth else { continue }
            for child in self.children(of: current, reflectionBudget: &reflectionBudget) {
                queue.append((child, depth + 1))
            }
        }
    }

    /// The first value `read` returns for an error in the chain, outermost first.
    static func first<T>(in error: any Error, _ read: (any Error) -> T?) -> T? {
        var found: T?
        self.walk(error) { node in
            found = read(node)
            return found == nil
        }
        return found
    }

    /// The errors directly below `error`; reflection spends `reflectionBudget`, one for each stored value it looks at.
    static func children(of error: any Error, reflectionBudget: inout Int) -> [any Error] {
        if let provider = error as? any UnderlyingErrorProviding {
            return provider.underlyingErrors
        }
        if error is CancellationError { return [] }
        var children: [any Error] = []
        let nsError = error as NSError
        let userInfo = nsError.userInfo
        if let underlying = userInfo[NSUnderlyingErrorKey] as? any Error {
            children.append(underlying)
        }
        if let multiple = userInfo[Self.multipleUnderlyingErrorsKey] as? [any Error] {
            children.append(contentsOf: multiple)
        }
        if nsError.domain == CloudKitErrorCode.domain,
            let items = userInfo[CloudKitErrorCode.partialErrorsKey] as? [AnyHashable: Any]
        {
            for value in items.values {
                if let item = value as? any Error { children.append(item) }
            }
        }
        if children.isEmpty, !(type(of: error) is AnyObject.Type) {
            // A Swift value type that says nothing of what it wraps: look at its stored values.
            self.reflect(error, depth: 0, budget: &reflectionBudget, into: &children)
        }
        return children
    }

    /// `NSMultipleUnderlyingErrorsKey`, spelled out: the constant is not on every platform's Foundation.
    static let multipleUnderlyingErrorsKey = "NSMultipleUnderlyingErrorsKey"

    private static func reflect(_ value: Any, depth: Int, budget: inout Int, into children: inout [any Error]) {
        guard depth < Self.maximumReflectionDepth else { return }
        let mirror = Mirror(reflecting: value)
        for child in mirror.children {
            guard budget > 0 else { return }
            budget -= 1
            if let error = child.value as? any Error {
                children.append(error)
            } else if self.mayHoldErrors(child.value) {
                self.reflect(child.value, depth: depth + 1, budget: &budget, into: &children)
            }
        }
    }

    /// Whether a stored value is worth reflecting into: not a leaf such as a number or a string.
    private static func mayHoldErrors(_ value: Any) -> Bool {
        switch value {
        case is String, is Substring, is Int, is Double, is Bool, is Data, is URL, is Date: false
        default: !Mirror(reflecting: value).children.isEmpty
        }
    }
}
