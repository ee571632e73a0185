/// A binary min-heap: the event queue of the discrete-event simulations.
///
/// Elements order themselves; give equal-time events a sequence number so that
/// ties break in insertion order and a run is repeatable.
struct MinHeap<Element: Comparable> {
    private var elements: [Element] = []

    /// Whether the heap is empty.
    var isEmpty: Bool { self.elements.isEmpty }

    /// The number of elements.
    var count: Int { self.elements.count }

    /// The smallest element, if any.
    var minimum: Element? { self.elements.first }

    /// Adds `element`.
    mutating func insert(_ element: Element) {
        self.elements.append(element)
        var child = self.elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.elements[child] < self.elements[parent] else { break }
            self.elements.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the smallest element, if any.
    mutating func removeMinimum() -> Element? {
        guard !self.elements.isEmpty else { return nil }
        if self.elements.count == 1 { return self.elements.removeLast() }
        let minimum = self.elements[0]
        self.elements[0] = self.elements.removeLast()
        var parent = 0
        let count = self.elements.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            let right = left + 1
            var smallest = left
            if right < count && self.elements[right] < self.elements[left] { smallest = right }
            guard self.elements[smallest] < self.elements[parent] else { break }
            self.elements.swapAt(smallest, parent)
            parent = smallest
        }
        return minimum
    }

    /// Removes and returns every element, in no particular order.
    mutating func removeAll() -> [Element] {
        defer { self.elements.removeAll() }
        return self.elements
    }
}
