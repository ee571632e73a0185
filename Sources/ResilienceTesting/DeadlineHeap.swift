/// The sleeps parked on a test clock, earliest deadline first, and among equal deadlines in
/// the order they were inserted: a binary min-heap, so that moving time takes out only the
/// sleeps it ends, and a sleep cancelled anywhere in it leaves in logarithmic time.
///
/// Each entry carries an identity of the clock's choosing (unique among the entries held),
/// by which ``remove(id:)`` finds it, and a value (a sleeper's continuation, say).
package struct DeadlineHeap<Value> {
    fileprivate struct Entry {
        var deadline: TestClock.Instant
        /// The entry's place among those inserted, which breaks ties between equal deadlines.
        var sequence: UInt64
        var id: UInt64
        var value: Value

        func precedes(_ other: Entry) -> Bool {
            self.deadline < other.deadline || (self.deadline == other.deadline && self.sequence < other.sequence)
        }
    }

    private var entries: [Entry] = []
    /// Where each entry sits in ``entries``, by identity.
    private var positions: [UInt64: Int] = [:]
    private var nextSequence: UInt64 = 0

    /// An empty heap.
    package init() {}

    /// The number of entries.
    package var count: Int { self.entries.count }

    /// Whether there are no entries.
    package var isEmpty: Bool { self.entries.isEmpty }

    /// The earliest deadline held, if any.
    package var earliestDeadline: TestClock.Instant? { self.entries.first?.deadline }

    /// Inserts `value` due at `deadline` under `id`, which no entry held has.
    package mutating func insert(_ value: Value, at deadline: TestClock.Instant, id: UInt64) {
        precondition(self.positions[id] == nil, "DeadlineHeap holds an entry \(id) already")
        self.entries.append(Entry(deadline: deadline, sequence: self.nextSequence, id: id, value: value))
        self.nextSequence += 1
        self.positions[id] = self.entries.count - 1
        self.siftUp(from: self.entries.count - 1)
    }

    /// Takes out the earliest entry, first among equal deadlines, if its deadline is at most `target`.
    package mutating func popFirst(dueBy target: TestClock.Instant) -> (id: UInt64, value: Value)? {
        guard let first = self.entries.first, first.deadline <= target else { return nil }
        self.removeEntry(at: 0)
        return (first.id, first.value)
    }

    /// Takes out the entry with identity `id`, wherever it is; `nil` when none has it.
    package mutating func remove(id: UInt64) -> Value? {
        guard let index = self.positions[id] else { return nil }
        let value = self.entries[index].value
        self.removeEntry(at: index)
        return value
    }

    private mutating func removeEntry(at index: Int) {
        self.positions[self.entries[index].id] = nil
        let last = self.entries.removeLast()
        guard index < self.entries.count else { return }
        // The last entry fills the hole, then moves up or down to its place.
        self.entries[index] = last
        self.positions[last.id] = index
        if index > 0, last.precedes(self.entries[(index - 1) / 2]) {
            self.siftUp(from: index)
        } else {
            self.siftDown(from: index)
        }
    }

    private mutating func siftUp(from start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.entries[child].precedes(self.entries[parent]) else { break }
            self.swapEntries(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < self.entries.count, self.entries[left].precedes(self.entries[first]) { first = left }
            if right < self.entries.count, self.entries[right].precedes(self.entries[first]) { first = right }
            guard first != parent else { return }
            self.swapEntries(parent, first)
            parent = first
        }
    }

    private mutating func swapEntries(_ a: Int, _ b: Int) {
        self.entries.swapAt(a, b)
        self.positions[self.entries[a].id] = a
        self.positions[self.entries[b].id] = b
    }
}

extension DeadlineHeap: Sendable where Value: Sendable {}

extension DeadlineHeap.Entry: Sendable where Value: Sendable {}
