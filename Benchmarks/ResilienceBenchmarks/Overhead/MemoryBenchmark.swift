/// A row of the memory table: how many heap bytes one object costs.
struct MemoryBenchmark: Sendable {
    /// The row name, such as `retry-policy`.
    let name: String
    /// What one object is, for the table.
    let detail: String
    /// Makes one object; called many times, and every object is kept alive until the count is taken.
    let make: @Sendable () throws -> AnyObject

    /// Measures `count` objects: the allocator's live bytes and allocations, divided by `count`.
    ///
    /// Bytes are the allocator's usable sizes (`malloc_usable_size`), so they include
    /// its rounding: what the objects really occupy, not what their types declare.
    func measure(count: Int) throws -> MemoryResult {
        var objects: [AnyObject] = []
        objects.reserveCapacity(count + 1)
        // One object first, so one-time costs (metadata, lazy globals) stay out of the count.
        objects.append(try self.make())
        let before = AllocationCounter.start()
        for _ in 0..<count {
            objects.append(try self.make())
        }
        let delta = AllocationCounter.stop(since: before)
        blackHole(objects)
        return MemoryResult(
            name: self.name,
            detail: self.detail,
            bytesPerObject: Double(delta.liveBytes) / Double(count),
            allocationsPerObject: Double(delta.allocations) / Double(count))
    }
}

/// The measured footprint of one kind of object.
struct MemoryResult: Sendable {
    /// The row name.
    var name: String
    /// What one object is.
    var detail: String
    /// Live heap bytes per object.
    var bytesPerObject: Double
    /// Heap blocks per object.
    var allocationsPerObject: Double
}
