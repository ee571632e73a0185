/// The pure state of a ``Hedging`` strategy: the recent successful latencies and
/// the hedge delay they give.
///
/// The delay is recomputed every few samples, not on every call, so reading it
/// costs nothing on the success path.
struct HedgingStateMachine: Sendable {
    private let delay: HedgingDelay
    private var samples: [Duration] = []
    private var next = 0
    private var sinceRecompute = 0
    private(set) var currentDelay: Duration

    init(_ delay: HedgingDelay) {
        self.delay = delay
        switch delay.kind {
        case .fixed(let fixed): self.currentDelay = fixed
        case .percentile(_, _, let initial): self.currentDelay = initial
        }
    }

    /// Records a successful call's latency: the time from its start to its first success.
    ///
    /// A negative reading (the clock went back during the call) is left out: it says
    /// nothing about how long the call took, and enough of them would pull the delay
    /// below zero, or, read as zero, down to zero, hedging every call at once.
    mutating func record(_ latency: Duration) {
        guard case .percentile(let percentile, let sampleCount, _) = self.delay.kind, latency >= .zero else { return }
        if self.samples.count < sampleCount {
            self.samples.append(latency)
        } else {
            self.samples[self.next] = latency
            self.next = (self.next + 1) % sampleCount
        }
        self.sinceRecompute += 1
        // Recompute every tenth of the window, once there are ten samples.
        guard self.samples.count >= 10, self.sinceRecompute >= Swift.max(1, sampleCount / 10) else { return }
        self.sinceRecompute = 0
        let sorted = self.samples.sorted()
        let rank = Int((percentile / 100 * Double(sorted.count)).rounded(.up)) - 1
        self.currentDelay = sorted[Swift.min(sorted.count - 1, Swift.max(0, rank))]
    }
}
