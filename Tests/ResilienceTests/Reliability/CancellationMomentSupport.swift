import Foundation
import Testing

/// Whether this run is the ThreadSanitizer step of `.ci/run`, which sets `RESILIENCE_TSAN`.
///
/// The suites that race thousands of tasks against a test clock moved by a driver task are
/// starved there (the sanitizer slows every access, and the whole suite runs at once on two
/// cores) past their time limits, and a driver that moves the clock while a paused thread has
/// not yet reached its sleep makes a case read time that never passed. They stand aside in the
/// sanitizer's run of the whole suite and run in the plain test step, and again under the
/// sanitizer right after, on their own (`.ci/steps/30-tsan.sh`), with the cores to themselves.
let runsUnderThreadSanitizer = ProcessInfo.processInfo.environment["RESILIENCE_TSAN"] != nil
