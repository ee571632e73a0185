/// A pipeline's stages, or the rest of a pipeline a stage runs, that may hold a ``RetryPolicy``
/// stage: a ``Hedging`` stage without a classifier of its own judges a failed attempt with the
/// classifier of the nearest such stage inside it (``Hedging/retryStageClassifier(in:)``), else
/// with that of the nearest one around it, settled when the pipeline is built
/// (``HedgingStagesResolving``).
///
/// Read only when a hedged attempt fails, by casting, or when a pipeline is built, so the success
/// path of a pipeline pays nothing for it. A stage of the user's own is not looked into.
protocol RetryStageHolding {
    /// The classifier of the outermost ``RetryPolicy`` stage here, the nearest to a stage
    /// outside it; `nil` for none.
    var nearestRetryClassifier: (any RetryClassifier)? { get }
    /// The classifier of the innermost ``RetryPolicy`` stage here, the nearest to a stage
    /// inside it; `nil` for none.
    var innermostRetryClassifier: (any RetryClassifier)? { get }
}

extension RetryPolicy: RetryStageHolding {
    nonisolated var nearestRetryClassifier: (any RetryClassifier)? { self.classifier }
    nonisolated var innermostRetryClassifier: (any RetryClassifier)? { self.classifier }
}

extension NestedStrategies: RetryStageHolding {
    var nearestRetryClassifier: (any RetryClassifier)? {
        (self.outer as? any RetryStageHolding)?.nearestRetryClassifier
            ?? (self.inner as? any RetryStageHolding)?.nearestRetryClassifier
    }

    var innermostRetryClassifier: (any RetryClassifier)? {
        (self.inner as? any RetryStageHolding)?.innermostRetryClassifier
            ?? (self.outer as? any RetryStageHolding)?.innermostRetryClassifier
    }
}

extension ResiliencePipeline: RetryStageHolding {
    var nearestRetryClassifier: (any RetryClassifier)? {
        (self.strategies as? any RetryStageHolding)?.nearestRetryClassifier
    }

    var innermostRetryClassifier: (any RetryClassifier)? {
        (self.strategies as? any RetryStageHolding)?.innermostRetryClassifier
    }
}

extension StagedOperation: RetryStageHolding {
    var nearestRetryClassifier: (any RetryClassifier)? {
        (self.stage as? any RetryStageHolding)?.nearestRetryClassifier
            ?? (self.rest as? any RetryStageHolding)?.nearestRetryClassifier
    }

    var innermostRetryClassifier: (any RetryClassifier)? {
        (self.rest as? any RetryStageHolding)?.innermostRetryClassifier
            ?? (self.stage as? any RetryStageHolding)?.innermostRetryClassifier
    }
}

/// Composed stages that hand the classifier of the nearest ``RetryPolicy`` stage around them
/// down to the ``Hedging`` stages in them, when the pipeline is built: a hedging stage with no
/// classifier of its own and no retry stage inside it judges a failed attempt with it.
///
/// A ``NestedStrategies`` settles, as it is made, the classifier around each of its two stages
/// (for the inner one, the innermost retry stage of the outer one, else the one around the pair)
/// and hands it down by copying: a hedging stage becomes a copy that knows it and shares the
/// strategy's state (``Hedging/init(copying:retryClassifierAround:)``), a composed stage a copy
/// whose stages were handed it in turn; a ``ResiliencePipeline`` nested as a stage passes it on to
/// its own stages. Built once: the pipeline's values keep their layout and its call path is
/// unchanged, so a call pays nothing for it. (Stored in each pair and handed to the stage as an
/// argument instead, it grew the values the stages pass down and cost the inline pipeline the
/// allocation of the caller's closure context on every call.)
@usableFromInline
protocol HedgingStagesResolving {
    /// A copy of these stages for a place where `classifier` is that of the nearest
    /// ``RetryPolicy`` stage around them (`nil` for none).
    func resolvingHedging(around classifier: (any RetryClassifier)?) -> Self
}

/// The build-time walks of a pipeline's stages for its ``Hedging`` stages.
enum RetryStages {
    /// `stage`, told that `classifier` is that of the nearest retry stage around it: a hedging
    /// stage's copy that knows it, stages composed with their hedging stages so told; else
    /// `stage` itself, and so for no classifier (a hedging stage keeps what a nearer retry stage
    /// told it).
    static func resolving<Stage>(_ stage: Stage, around classifier: (any RetryClassifier)?) -> Stage {
        guard let classifier else { return stage }
        if let hedging = stage as? Hedging {
            return Hedging(copying: hedging, retryClassifierAround: classifier) as! Stage
        }
        guard let stages = stage as? any HedgingStagesResolving else { return stage }
        return stages.resolvingHedging(around: classifier) as! Stage
    }

    /// The classifier of the innermost retry stage in `stage`, the nearest to what runs inside it.
    static func innermostClassifier(in stage: Any) -> (any RetryClassifier)? {
        (stage as? any RetryStageHolding)?.innermostRetryClassifier
    }
}

extension NestedStrategies: HedgingStagesResolving {
    @usableFromInline
    func resolvingHedging(around classifier: (any RetryClassifier)?) -> Self {
        Self(outer: self.outer, inner: self.inner, retryClassifierAround: classifier)
    }
}

extension ResiliencePipeline: HedgingStagesResolving {
    @usableFromInline
    func resolvingHedging(around classifier: (any RetryClassifier)?) -> Self {
        Self(strategies: RetryStages.resolving(self.strategies, around: classifier))
    }
}
