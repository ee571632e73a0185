// Stubs for documentation examples that call "some remote API" without caring
// which one. A code block opts in with `<!-- snippet: prelude api -->`.

/// A user profile, as an example API returns it.
struct Profile: Sendable, Equatable {
    var name: String
}

/// An order, as an example API accepts it.
struct Order: Sendable, Equatable {
    var id: Int
}

/// A remote API whose calls may fail transiently.
struct ExampleAPI: Sendable {
    func fetchProfile() async throws -> Profile { Profile(name: "Ada") }
    func fetchOrders() async throws -> [Order] { [] }
    func place(_ order: Order) async throws -> Order { order }
}

let api = ExampleAPI()
