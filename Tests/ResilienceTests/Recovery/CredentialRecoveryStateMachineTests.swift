import Resilience
import Testing

/// The single-flight decisions on plain values: no lock, no tasks, no continuations.
@Suite struct CredentialRecoveryStateMachineTests {
    typealias Machine = CredentialRecoveryStateMachine<String, String>
    struct RefreshFailed: Error {}

    private func park(_ machine: inout Machine, _ waiter: String, carrying generation: UInt64) -> Machine.RecoverAction
    {
        let id = machine.makeWaiterID()
        return machine.recover(after: generation, id: id, waiter: waiter, at: .zero)
    }

    @Test func theFirstCredentialFailureStartsARefreshAndLaterOnesWaitForIt() throws {
        var machine = Machine(credential: "old")
        guard case .parkAndRefresh(let credential, let generation) = self.park(&machine, "a", carrying: 0) else {
            Issue.record("the first failure must start a refresh")
            return
        }
        #expect(credential == "old")
        #expect(generation == 0)
        guard case .park = self.park(&machine, "b", carrying: 0) else {
            Issue.record("a failure during the refresh must wait for it")
            return
        }
        #expect(machine.waiterCount == 2)

        let (waiters, result) = machine.refreshFinished(from: 0, with: .success("new"), remembering: .forGood)
        #expect(waiters == ["a", "b"])
        #expect(try result.get().credential == "new")
        #expect(try result.get().generation == 1)
        #expect(machine.waiterCount == 0)
        #expect(machine.refreshingGeneration == nil)
    }

    @Test func aRequestCarryingAnOlderCredentialRetriesWithTheNewOneWithoutRefreshing() throws {
        var machine = Machine(credential: "old")
        _ = self.park(&machine, "a", carrying: 0)
        _ = machine.refreshFinished(from: 0, with: .success("new"), remembering: .forGood)

        guard case .resume(let result) = self.park(&machine, "late", carrying: 0) else {
            Issue.record("a stale request must not wait or refresh")
            return
        }
        #expect(try result.get().credential == "new")
        #expect(machine.refreshingGeneration == nil)
    }

    @Test func aFailedRefreshIsRememberedForItsGenerationUntilTheCredentialIsReplaced() throws {
        var machine = Machine(credential: "old")
        _ = self.park(&machine, "a", carrying: 0)
        let (waiters, result) = machine.refreshFinished(from: 0, with: .failure(RefreshFailed()), remembering: .forGood)
        #expect(waiters == ["a"])
        #expect(throws: RefreshFailed.self) { try result.get() }

        guard case .resume(let again) = self.park(&machine, "late", carrying: 0) else {
            Issue.record("a failed generation must not refresh again")
            return
        }
        #expect(throws: RefreshFailed.self) { try again.get() }

        let replaced = machine.replace(with: "signed-in")
        #expect(replaced.generation == 1)
        guard case .parkAndRefresh(let credential, _) = self.park(&machine, "next", carrying: 1) else {
            Issue.record("a new credential that fails must refresh again")
            return
        }
        #expect(credential == "signed-in")
    }

    @Test func cancellingAParkedWaiterRemovesOnlyThatWaiter() {
        var machine = Machine(credential: "old")
        let first = machine.makeWaiterID()
        _ = machine.recover(after: 0, id: first, waiter: "a", at: .zero)
        let second = machine.makeWaiterID()
        _ = machine.recover(after: 0, id: second, waiter: "b", at: .zero)

        #expect(machine.cancel(id: first) == "a")
        #expect(machine.refreshingGeneration == 0)  // the refresh is not the waiter's to stop
        let (waiters, _) = machine.refreshFinished(from: 0, with: .success("new"), remembering: .forGood)
        #expect(waiters == ["b"])
    }

    @Test func aWaiterCancelledBeforeItParksEndsAtOnceWithoutStartingARefresh() {
        var machine = Machine(credential: "old")
        let id = machine.makeWaiterID()
        #expect(machine.cancel(id: id) == nil)
        guard case .resume(let result) = machine.recover(after: 0, id: id, waiter: "a", at: .zero) else {
            Issue.record("a cancelled waiter must not park")
            return
        }
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(machine.refreshingGeneration == nil)
        #expect(machine.waiterCount == 0)
    }

    @Test func aRefreshOvertakenByAReplacementHandsItsWaitersTheReplacement() throws {
        var machine = Machine(credential: "old")
        _ = self.park(&machine, "a", carrying: 0)
        _ = machine.replace(with: "signed-in")
        let (waiters, result) = machine.refreshFinished(from: 0, with: .success("refreshed"), remembering: .forGood)
        #expect(waiters == ["a"])
        #expect(try result.get().credential == "signed-in")
        #expect(machine.credential == "signed-in")
        #expect(machine.generation == 1)
    }

    @Test func aFailureRememberedUntilAnInstantAnswersLaterCallsUntilThenAndARefreshAfter() {
        var machine = Machine(credential: "old")
        _ = machine.recover(after: 0, id: machine.makeWaiterID(), waiter: "a", at: .zero)
        _ = machine.refreshFinished(from: 0, with: .failure(RefreshFailed()), remembering: .until(.seconds(30)))
        guard
            case .resume(.failure) = machine.recover(
                after: 0, id: machine.makeWaiterID(), waiter: "b", at: .seconds(29))
        else {
            Issue.record("a call before the instant must get the remembered failure")
            return
        }
        guard
            case .parkAndRefresh = machine.recover(after: 0, id: machine.makeWaiterID(), waiter: "c", at: .seconds(30))
        else {
            Issue.record("a call at the instant must refresh again")
            return
        }
    }

    @Test func aFailureNotRememberedLetsTheNextCallRefreshAtOnce() {
        var machine = Machine(credential: "old")
        _ = machine.recover(after: 0, id: machine.makeWaiterID(), waiter: "a", at: .zero)
        let (waiters, result) = machine.refreshFinished(
            from: 0, with: .failure(RefreshFailed()), remembering: .notAtAll)
        #expect(waiters == ["a"])
        guard case .failure = result else {
            Issue.record("the waiters still get the failure")
            return
        }
        guard case .parkAndRefresh = machine.recover(after: 0, id: machine.makeWaiterID(), waiter: "b", at: .zero)
        else {
            Issue.record("the next call must refresh again")
            return
        }
    }

    @Test func aCallAskingAgainAfterAFailedRoundTakesARoundThatFailedSinceWithoutARefresh() {
        var machine = Machine(credential: "old")
        _ = machine.recover(after: 0, id: machine.makeWaiterID(), waiter: "a", at: .zero)
        _ = machine.recover(after: 0, id: machine.makeWaiterID(), waiter: "b", at: .zero)
        _ = machine.refreshFinished(from: 0, with: .failure(RefreshFailed()), remembering: .notAtAll)
        #expect(machine.failedRound?.round == 1)

        // "a" waited less, asks again and starts round 2, which fails before "b" asks.
        guard
            case .parkAndRefresh = machine.recover(
                after: 0, seen: 1, id: machine.makeWaiterID(), waiter: "a", at: .seconds(1))
        else {
            Issue.record("round 1 is no news to a call that saw it: it refreshes again")
            return
        }
        _ = machine.refreshFinished(from: 0, with: .failure(RefreshFailed()), remembering: .notAtAll)
        #expect(machine.rounds == 2)
        guard
            case .resume(.failure) = machine.recover(
                after: 0, seen: 1, id: machine.makeWaiterID(), waiter: "b", at: .seconds(2))
        else {
            Issue.record("round 2 is news to a call that saw round 1: it is its answer")
            return
        }
        #expect(machine.rounds == 2)
        guard
            case .parkAndRefresh = machine.recover(
                after: 0, seen: 2, id: machine.makeWaiterID(), waiter: "b", at: .seconds(3))
        else {
            Issue.record("a call that saw the last round refreshes again")
            return
        }
        #expect(machine.rounds == 3)
    }
}
