import Foundation

/// Walks an error and the errors it wraps, outermost first.
///
/// The errors below one are, in order: those it names through
/// ``UnderlyingErrorProviding`` (which then replaces every other way); the
/// `NSUnderlyingErrorKey` and `NSMultipleUnderlyingErrorsKey` entries of its
/// `userInfo` (a `CustomNSError`'s `errorUserInfo` included); a CloudKit partial
/// failure's per-item errors; an HTTP response with a failing status among the values
/// of its `userInfo` (``HTTPResponseReporting``, as a `HeldHTTPResponse`); and, for a
/// Swift value or class instance that is not an `NSError`, the errors and failing HTTP
/// responses found by reflecting on its stored values (an enum case's payload, a
/// struct's or a class's properties, the elements of an array or dictionary), a few
/// levels into each.
///
/// The walk is bounded in depth, in the number of errors visited, in the `userInfo`
/// values looked at for a response and in the number of stored values reflection pays
/// for, and the proofs that a stored value
/// holds no error make a bounded number of mirrors, so a cyclic or enormous
/// structure costs a bounded amount; it runs on failure paths only. A library time
/// limit's error is a leaf: the operation's error it keeps (`operationError`) is not
/// below it in the chain (see `LateOperationError`). How reflection spends its
/// allowance, so that no part of an error can starve another, is told in
/// `ErrorChain+Reflection.swift`.
enum ErrorChain {
    /// How many wrappers deep the walk goes.
    static let maximumDepth = 8
    /// How many errors it visits at most.
    static let maximumErrors = 1_024
    /// How many levels of stored values reflection looks through within one error.
    static let maximumReflectionDepth = 6
    /// How many stored values reflection pays for in all, over the whole walk.
    static let maximumReflectedValues = 1_024
    /// How many values of one error's `userInfo` the walk looks at for an HTTP response.
    static let maximumUserInfoValues = 64
    /// How many mirrors the proofs that a stored value holds no error may make over the whole
    /// walk; past it, a value not yet proved is taken to be one that may hold errors, and is
    /// looked into at the cost of ``maximumReflectedValues``.
    static let maximumProofMirrors = 4 * maximumReflectedValues

    /// What one walk spent on reflection.
    struct Spending {
        /// How much of ``ErrorChain/maximumReflectedValues`` it spent.
        var reflected: Int
        /// How many mirrors its proofs made, at most ``ErrorChain/maximumProofMirrors``.
        var proofMirrors: Int
    }

    /// Calls `visit` for `error` and each error below it, outermost first, until it returns `false`.
    ///
    /// A class instance (an `NSError` included) is visited once, however often the chain reaches it.
    /// Returns how much of ``maximumReflectedValues`` reflection spent.
    @discardableResult
    static func walk(_ error: any Error, _ visit: (any Error) -> Bool) -> Int {
        self.measuredNodeWalk(error) { visit($0.error) }.reflected
    }

    /// Walks as ``walk(_:_:)`` does, handing each error over as a ``Node``, whose `NSError` form
    /// the visitor and the walk share.
    @discardableResult
    static func walkNodes(_ error: any Error, _ visit: (Node) -> Bool) -> Int {
        self.measuredNodeWalk(error, visit).reflected
    }

    /// Walks as ``walk(_:_:)`` does and tells what reflection spent, its proofs included.
    static func measuredWalk(_ error: any Error, _ visit: (any Error) -> Bool) -> Spending {
        self.measuredNodeWalk(error) { visit($0.error) }
    }

    /// Walks as ``walkNodes(_:_:)`` does and tells what reflection spent, its proofs included.
    static func measuredNodeWalk(_ error: any Error, _ visit: (Node) -> Bool) -> Spending {
        // Whether reflection looks into an error is asked once, when it joins the queue.
        let kinds = ErrorKinds.of(error)
        var queue: [(error: any Error, depth: Int, kinds: ErrorKinds, claims: Bool)] = [
            (error, 0, kinds, Self.isReflected(kinds))
        ]
        var reflection = Reflection()
        // How many errors in the queue, from `index` on, reflection will look into.
        var reflected = queue[0].claims ? 1 : 0
        var index = 0
        while index < queue.count {
            let (current, depth, kinds, claims) = queue[index]
            index += 1
            if claims { reflected -= 1 }
            if type(of: current) is AnyObject.Type, !reflection.firstSight(of: current as AnyObject) { continue }
            let node = Node(current, kinds: kinds)
            guard visit(node) else { break }
            guard depth < Self.maximumDepth else { continue }
            // Each error still to be looked into by reflection gets an equal part of what it has
            // left; what one does not spend stays for those behind it. An `NSError`, or an error
            // that names what it wraps, claims nothing.
            let waiting = reflected + (claims ? 1 : 0)
            let allowance = Swift.max(Swift.min(reflection.budget, 1), reflection.budget / Swift.max(1, waiting))
            let room = Self.maximumErrors - queue.count
            for child in self.children(
                of: node, claims: claims, room: room, allowance: allowance, reflection: &reflection)
            {
                let childKinds = ErrorKinds.of(child)
                let childClaims = Self.isReflected(childKinds)
                if childClaims { reflected += 1 }
                queue.append((child, depth + 1, childKinds, childClaims))
            }
        }
        return Spending(
            reflected: Self.maximumReflectedValues - reflection.budget, proofMirrors: reflection.proofMirrors)
    }

    /// Whether the walk reflects on `error`'s stored values: it is neither an `NSError` nor an
    /// error that names what it wraps, nor a library time limit's error.
    static func isReflected(_ error: any Error) -> Bool {
        self.isReflected(ErrorKinds.of(error))
    }

    /// Whether the walk reflects on the stored values of an error of these kinds.
    static func isReflected(_ kinds: ErrorKinds) -> Bool {
        kinds.isDisjoint(with: [.nsError, .underlyingProviding, .cancellation, .timeLimit])
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

    /// The errors directly below `node`'s error, at most `room` of them; reflection spends at most
    /// `allowance`. `claims` is ``isReflected(_:)`` of that error.
    static func children(
        of node: Node, claims: Bool, room: Int, allowance: Int, reflection: inout Reflection
    ) -> [any Error] {
        guard room > 0 else { return [] }
        let error = node.error
        if node.kinds.contains(.underlyingProviding), let provider = error as? any UnderlyingErrorProviding {
            return Array(provider.underlyingErrors.prefix(room))
        }
        // A time limit's error wraps nothing: the operation's late error it keeps is read by
        // the rules alone (see `LateOperationError`), so a classifier still judges a time-out.
        // Nor does a `CancellationError`. Of the errors reflection passes over, those two and an
        // `NSError`, only an `NSError` has a `userInfo` to read.
        if !claims && !node.kinds.contains(.nsError) { return [] }
        guard let nsError = node.nsError else { return [] }
        var children: [any Error] = []
        let userInfo = node.userInfo
        if !userInfo.isEmpty {
            if let underlying = userInfo[NSUnderlyingErrorKey] as? any Error {
                children.append(underlying)
            }
            if let multiple = userInfo[Self.multipleUnderlyingErrorsKey] as? [any Error] {
                children.append(contentsOf: multiple.prefix(room - children.count))
            }
            if nsError.domain == CloudKitErrorCode.domain,
                let items = userInfo[CloudKitErrorCode.partialErrorsKey] as? [AnyHashable: Any]
            {
                for value in items.values where children.count < room {
                    if let item = value as? any Error { children.append(item) }
                }
            }
            // An HTTP response kept under a key of an SDK's own (see `HTTPResponseReporting`).
            var looked = 0
            for value in userInfo.values {
                guard children.count < room, looked < Self.maximumUserInfoValues else { break }
                looked += 1
                if let response = HeldHTTPResponse(value) { children.append(response) }
            }
        }
        if claims {
            // A Swift value or class instance: the errors among its stored values join what its
            // `userInfo` says, less the `NSError` it bridges to (a URLError stores its own).
            reflection.search(
                error, bridgingTo: nsError, allowance: allowance, room: room - children.count, into: &children)
        }
        return children
    }

    /// `NSMultipleUnderlyingErrorsKey`, spelled out: the constant is not on every platform's Foundation.
    static let multipleUnderlyingErrorsKey = "NSMultipleUnderlyingErrorsKey"

    /// One error of a chain, with its `NSError` form made once, on first use, for every reader.
    ///
    /// Bridging a Swift error makes a new `NSError` each time (and may build its `userInfo`,
    /// calling a `CustomNSError`'s `errorUserInfo`); the failure analysis reads several facts
    /// from each error and the walk reads what it wraps, so they share one bridge.
    final class Node {
        /// The error.
        let error: any Error

        /// What the error is (see ``ErrorKinds``).
        let kinds: ErrorKinds

        init(_ error: any Error, kinds: ErrorKinds? = nil) {
            self.error = error
            self.kinds = kinds ?? ErrorKinds.of(error)
        }

        /// `error` as an `NSError`; `nil` for a `CancellationError`, which no reader bridges.
        private(set) lazy var nsError: NSError? =
            self.kinds.contains(.cancellation) && self.error is CancellationError ? nil : self.error as NSError

        /// The `userInfo` of ``nsError``; empty for a `CancellationError`.
        private(set) lazy var userInfo: [String: Any] = self.nsError?.userInfo ?? [:]
    }
}
