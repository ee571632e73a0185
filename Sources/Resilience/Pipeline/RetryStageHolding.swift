/// A pipeline's stages, or the rest of a pipeline a stage runs, that may hold a ``RetryPolicy``
/// stage: a ``Hedging`` stage without a classifier of its own judges a failed attempt with that
/// stage's classifier (``Hedging/retryStageClassifier(in:)``).
///
/// Read only when a hedged attempt fails, by casting, so the success path of a pipeline pays
/// nothing for it. A stage of the user's own is not looked into.
protocol RetryStageHolding {
    /// The classifier of the outermost ``RetryPolicy`` stage here, the nearest to a stage
    /// outside it; `nil` for none.
    var nearestRetryClassifier: (any RetryClassifier)? { get }
}

extension RetryPolicy: RetryStageHolding {
    nonisolated var nearestRetryClassifier: (any RetryClassifier)? { self.classifier }
}

extension NestedStrategies: RetryStageHolding {
    var nearestRetryClassifier: (any RetryClassifier)? {
        (self.outer as? any RetryStageHolding)?.nearestRetryClassifier
            ?? (self.inner as? any RetryStageHolding)?.nearestRetryClassifier
    }
}

extension ResiliencePipeline: RetryStageHolding {
    var nearestRetryClassifier: (any RetryClassifier)? {
        (self.strategies as? any RetryStageHolding)?.nearestRetryClassifier
    }
}

extension StagedOperation: RetryStageHolding {
    var nearestRetryClassifier: (any RetryClassifier)? {
        (self.stage as? any RetryStageHolding)?.nearestRetryClassifier
            ?? (self.rest as? any RetryStageHolding)?.nearestRetryClassifier
    }
}
