import Foundation

// How the chain finds errors among the stored values of an error that says nothing of
// what it wraps, within a fixed allowance, without letting one part of an error starve
// another.
//
// - What costs: looking into a value (making its `Mirror`) costs one, and so does each
//   element of a collection looked at. The stored properties, payload values and tuple
//   elements of a value looked into are sorted for free: there are as many as its type
//   declares, whatever the input.
// - What is passed over: a value that is an error joins the chain, and so does an HTTP
//   response with a failing status (`HTTPResponseReporting`, as a `HeldHTTPResponse`); a
//   value whose type cannot hold either costs nothing. The library's leaf types (numbers, text, dates,
//   data, URLs, and optionals and collections of them) are known by `ErrorFreeValue`; an
//   app's structures and tuples are proved leaf from their stored values' declared types,
//   so a payload of 1,100 succeeded records is passed over whole. A type proved leaf is
//   remembered for the walk; a value proved to hold none while its type could (an enum
//   among its stored values) is proved again for the next value. The proofs make at most
//   `maximumProofMirrors` mirrors a walk; past that, a value not yet proved is looked into
//   at the walk's cost like any other that could hold errors. A
//   collection whose declared element type could hold an error (`Any`, an enum such as
//   `Result`, a class) is looked into element by element.
// - Who gets what: the values that could hold errors are looked into after the rest of
//   their level has been sorted, each with an equal part of what is left of its parent's
//   allowance, an error already found counting as one claimant more (it is looked into
//   later with its own part); what a value leaves unspent passes to the next. Across the
//   walk, each error waiting to be looked into gets an equal part of what is left.
// - Cycles: a class instance is looked into once a walk.
extension ErrorChain {
    /// What one walk's reflection has left to spend, the class instances it has seen, and
    /// the types it has proved hold no error.
    struct Reflection {
        /// What reflection may still spend over the walk.
        private(set) var budget = ErrorChain.maximumReflectedValues
        /// The class instances seen, kept alive so that their identities stay theirs during the walk.
        private var seenObjects: [ObjectIdentifier: AnyObject] = [:]
        /// The types this walk has proved can hold no error.
        private var errorFreeTypes: Set<ObjectIdentifier> = []
        /// The `NSError` the error being searched bridges to, which is not an error below it.
        private var bridged: NSError?
        /// Whether a stored `NSError` with `bridged`'s domain and code is taken for it: only for
        /// a type that stores its own bridged `NSError`, where bridging makes a new one.
        private var bridgedByDomainAndCode = false
        /// How many mirrors the proofs have made in this walk.
        private(set) var proofMirrors = 0

        /// Whether `object` is seen for the first time in this walk; it counts as seen from now on.
        mutating func firstSight(of object: AnyObject) -> Bool {
            self.seenObjects.updateValue(object, forKey: ObjectIdentifier(object)) == nil
        }

        /// Appends to `children` the errors among `error`'s stored values, at most `room` of
        /// them, spending at most `allowance` of the walk's budget.
        mutating func search(
            _ error: any Error, bridgingTo nsError: NSError, allowance: Int, room: Int, into children: inout [any Error]
        ) {
            let allowance = Swift.min(allowance, self.budget)
            guard allowance > 0, room > 0 else { return }
            if Self.holdsNothing(error) {
                // What looking into it would spend: its mirror, with nothing below to look at.
                self.budget -= 1
                return
            }
            self.bridged = nsError
            self.bridgedByDomainAndCode = Self.storesItsBridgedError(error)
            defer {
                self.bridged = nil
                self.bridgedByDomainAndCode = false
            }
            let limit = children.count + room
            let spent = self.lookInto(error, depth: 0, allowance: allowance, limit: limit, found: &children)
            self.budget -= spent
        }

        /// Looks into `value`, spending at most `allowance` (at least one); returns what it spent.
        private mutating func lookInto(
            _ value: Any, depth: Int, allowance: Int, limit: Int, found: inout [any Error]
        ) -> Int {
            guard allowance > 0, depth < ErrorChain.maximumReflectionDepth else { return 0 }
            var spent = 1
            var deferred: [Any] = []
            let mirror = Mirror(reflecting: value)
            switch mirror.displayStyle {
            case .collection?, .set?, .dictionary?:
                let pairs = mirror.displayStyle == .dictionary
                for element in mirror.children {
                    guard spent < allowance, found.count < limit else { break }
                    spent += 1
                    if pairs {
                        // A key and its value: both are looked at with the element.
                        for part in Mirror(reflecting: element.value).children {
                            self.sort(part.value, deferring: &deferred, found: &found)
                        }
                    } else {
                        self.sort(element.value, deferring: &deferred, found: &found)
                    }
                }
            default:
                var level: Mirror? = mirror
                while let current = level, !Self.endsTheClimb(current.subjectType) {
                    for child in current.children where found.count < limit {
                        self.sort(child.value, deferring: &deferred, found: &found)
                    }
                    level = current.superclassMirror
                }
            }
            // Only the searched error's own stored values can be the `NSError` it bridges to.
            if depth == 0 { self.bridged = nil }
            for (index, next) in deferred.enumerated() {
                let left = allowance - spent
                guard left > 0, found.count < limit else { break }
                let claimants = deferred.count - index + found.count
                let share = Swift.max(1, left / claimants)
                spent += self.lookInto(next, depth: depth + 1, allowance: share, limit: limit, found: &found)
            }
            return spent
        }

        /// Files a stored value: an error joins `found`, a value that could hold one waits in
        /// `deferred`, anything else is passed over.
        private mutating func sort(_ value: Any, deferring deferred: inout [Any], found: inout [any Error]) {
            if let error = value as? any Error {
                if !self.isTheSearchedErrorBridged(error) { found.append(error) }
                return
            }
            if let optional = value as? any OptionalValue {
                // An optional is seen through at no cost: `var next: Node?` is one step, not two.
                if let wrapped = optional.wrappedValue { self.sort(wrapped, deferring: &deferred, found: &found) }
                return
            }
            if self.verdict(on: value, depth: 0) != .mayHoldErrors { return }
            // Asked only of a value that may hold errors, which every response does: an HTTP
            // response with a failing status joins the chain as the error it stands for.
            if let response = HeldHTTPResponse(value) {
                found.append(response)
                return
            }
            if type(of: value) is AnyObject.Type, !self.firstSight(of: value as AnyObject) { return }
            deferred.append(value)
        }

        /// The error types proved to hold nothing that the walk takes (see ``holdsNothing(_:)``),
        /// `true`, or not proved to, `false`; a type is proved once a process.
        private static let provedTypes = Lock<[ObjectIdentifier: Bool]>([:])
        /// How many types ``provedTypes`` remembers: a program has a bounded number of error types,
        /// but generic ones can be made without end.
        static let maximumProvedTypes = 4_096

        /// Whether no value of `error`'s type can hold an error or an HTTP response among its stored
        /// values, so that looking into it would spend its mirror and find nothing.
        ///
        /// Foundation's `URLError` and `CocoaError` store nothing but the `NSError` they bridge to. A
        /// structure of an app's (or of the library's) is proved once a process, from the declared
        /// types of its stored values, as the walk proves a stored value's type (``verdict(on:depth:)``);
        /// an enum, a class and a type that makes its own mirror are never proved: another case,
        /// a subclass or another value may show other stored values. The proof runs outside the
        /// lock, which guards the remembered answers only.
        static func holdsNothing(_ error: any Error) -> Bool {
            let key = ObjectIdentifier(type(of: error))
            if key == ObjectIdentifier(URLError.self) || key == ObjectIdentifier(CocoaError.self) { return true }
            if let known = Self.provedTypes.withLock({ $0[key] }) { return known }
            let proved = Self.provesHoldingNothing(error)
            Self.provedTypes.withLock { remembered in
                if remembered.count < Self.maximumProvedTypes { remembered[key] = proved }
            }
            return proved
        }

        /// Whether `error` is a structure whose every stored value's declared type can hold no error.
        private static func provesHoldingNothing(_ error: any Error) -> Bool {
            guard Self.mirrorKeepsDeclaredTypes, !(type(of: error) is AnyObject.Type), !(error is any CustomReflectable)
            else { return false }
            let mirror = Mirror(reflecting: error)
            guard mirror.displayStyle == .struct else { return false }
            // A proof of its own, whose mirrors no walk pays for; it is made once a type.
            var proof = Reflection()
            for child in mirror.children where proof.verdict(onStored: child.value, depth: 0) != .errorFree {
                return false
            }
            return true
        }

        /// Whether `error`, a stored value of the error being searched, is that error as the
        /// `NSError` it bridges to: a `URLError` or a `CocoaError` stores that `NSError`, whose
        /// `userInfo` is already read. Where bridging makes a new `NSError` (on Linux), one
        /// with such an error's own domain and code is taken for it; any other error's stored
        /// `NSError` is an error below it, whatever its domain and code.
        private func isTheSearchedErrorBridged(_ error: any Error) -> Bool {
            guard let bridged = self.bridged, type(of: error) is NSError.Type else { return false }
            let nsError = error as NSError
            if nsError === bridged { return true }
            return self.bridgedByDomainAndCode && nsError.domain == bridged.domain && nsError.code == bridged.code
        }

        /// Whether `error` is of a type known to store the `NSError` it bridges to, on a platform
        /// where bridging does not hand that same `NSError` back.
        private static func storesItsBridgedError(_ error: any Error) -> Bool {
            #if canImport(Darwin)
                return false
            #else
                return error is URLError || error is CocoaError
            #endif
        }

        /// What a value's stored values say about errors in it and in others of its type.
        enum Verdict: Comparable {
            /// No value of its type can hold an error.
            case errorFree
            /// This value holds none, but another of its type might.
            case noneHere
            /// It may hold an error (or it was not worth finding out).
            case mayHoldErrors
        }

        /// Whether `value` can hold an error, and whether that is true of its whole type.
        ///
        /// A type proved error-free is remembered for the rest of the walk. The proof reads
        /// the declared type of each stored value: a stored property of type `Any` proves
        /// nothing of other values, however harmless its value here. A value that holds none
        /// but whose type could (an enum case without a payload among its stored values) is
        /// proved again each time; the proofs' mirrors are bounded over the walk by
        /// ``ErrorChain/maximumProofMirrors``, past which the answer is "may hold errors".
        private mutating func verdict(on value: Any, depth: Int) -> Verdict {
            let valueType = type(of: value)
            if valueType is any ErrorFreeValue.Type { return .errorFree }
            let key = ObjectIdentifier(valueType)
            if self.errorFreeTypes.contains(key) { return .errorFree }
            if valueType is any Error.Type || valueType is AnyObject.Type || valueType is any HTTPResponseReporting.Type
            {
                return .mayHoldErrors
            }
            guard depth < ErrorChain.maximumReflectionDepth else { return .mayHoldErrors }
            // The proofs share a bounded number of mirrors over the walk: past it, a value is
            // looked into at the cost of the walk's budget instead.
            guard self.proofMirrors < ErrorChain.maximumProofMirrors else { return .mayHoldErrors }
            self.proofMirrors += 1
            let mirror = Mirror(reflecting: value)
            var result: Verdict
            switch mirror.displayStyle {
            case .collection?, .set?, .dictionary?:
                // Every element has the collection's element type, which the first one declares.
                guard let first = mirror.children.first else { return .noneHere }
                guard self.verdict(onStored: first.value, depth: depth + 1) == .errorFree else { return .mayHoldErrors }
                // A collection of the standard library's holds nothing but its elements; another
                // type's mirror may show different children from one value to the next.
                result = value is any StandardCollection ? .errorFree : .noneHere
            case .optional?:
                guard let wrapped = mirror.children.first else { return .noneHere }
                result = self.verdict(onStored: wrapped.value, depth: depth + 1)
            case .enum?:
                // Only this case's payload is in sight: another case may carry an error.
                result = .noneHere
                for child in mirror.children {
                    result = Swift.max(result, self.verdict(onStored: child.value, depth: depth + 1))
                }
            case .class?:
                return .mayHoldErrors
            default:
                result = .errorFree
                for child in mirror.children where result != .mayHoldErrors {
                    result = Swift.max(result, self.verdict(onStored: child.value, depth: depth + 1))
                }
                if result == .errorFree, value is any CustomReflectable {
                    // A mirror of the type's own making may differ from one value to the next.
                    result = .noneHere
                }
            }
            if result == .errorFree { self.errorFreeTypes.insert(key) }
            return result
        }

        /// The verdict on a stored value, weakened to ``Verdict/noneHere`` when its declared
        /// type is an existential (or a superclass) that other values could fill differently.
        private mutating func verdict(onStored value: Any, depth: Int) -> Verdict {
            let verdict = self.verdict(on: value, depth: depth)
            let declared = _openExistential(value, do: declaredType(of:))
            guard Self.mirrorKeepsDeclaredTypes, ObjectIdentifier(declared) == ObjectIdentifier(type(of: value)) else {
                return Swift.max(verdict, .noneHere)
            }
            return verdict
        }

        /// Whether reflection hands a stored value over with its declared type, as the proofs
        /// need: checked once, so that a runtime that did otherwise would make the walk cost
        /// more, never miss an error.
        static let mirrorKeepsDeclaredTypes: Bool = {
            struct Probe {
                var value: Any = 0
            }
            guard let child = Mirror(reflecting: Probe()).children.first else { return false }
            return ObjectIdentifier(_openExistential(child.value, do: declaredType(of:))) == ObjectIdentifier(Any.self)
        }()

        /// Whether the climb through a class's superclasses stops at `type`: Foundation's roots
        /// hold nothing of an app's.
        private static func endsTheClimb(_ type: Any.Type) -> Bool {
            let type = ObjectIdentifier(type)
            return type == ObjectIdentifier(NSObject.self) || type == ObjectIdentifier(NSError.self)
        }
    }
}

/// The type a stored value is declared with, as reflection hands it over inside `Any`.
private func declaredType<Stored>(of value: Stored) -> Any.Type { Stored.self }

/// An optional, whatever it wraps: reflection sees through it.
private protocol OptionalValue {
    /// The wrapped value, or `nil`.
    var wrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    fileprivate var wrappedValue: Any? { self.map { $0 } }
}

/// A collection of the standard library, whose mirror shows its elements and nothing else.
private protocol StandardCollection {}

extension Array: StandardCollection {}
extension ArraySlice: StandardCollection {}
extension ContiguousArray: StandardCollection {}
extension Set: StandardCollection {}
extension Dictionary: StandardCollection {}
