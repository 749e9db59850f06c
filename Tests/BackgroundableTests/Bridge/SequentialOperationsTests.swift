import Dispatch
import Foundation
import Testing

@testable import Backgroundable

@Suite(.timeLimit(.minutes(1)))
struct SequentialOperationsTests {
    /// Members that hop to other threads before finishing still run strictly in order,
    /// on a queue that would otherwise run them all at once.
    @Test func keepsOrderWithOperationsThatHopThreads() async {
        let queue = OperationQueue()
        let order = Recorder<Int>()
        let running = Gauge()
        let operations = (0..<12).map { index in
            AsyncOperation(timeout: .infinity) { operation in
                running.enter()
                let hop: @Sendable () -> Void = {
                    order.append(index)
                    running.leave()
                    operation.finish()
                }
                switch index % 3 {
                case 0: DispatchQueue.global().async(execute: hop)
                case 1: Thread.detachNewThread(hop)
                default: hop()
                }
            }
        }
        await queue.addSequentialOperations(operations)
        #expect(order.all == Array(0..<12))
        #expect(running.maximum == 1)
        #expect(operations.allSatisfy { $0.isFinished })
    }

    @Test func worksWithPlainOperationsAndTheWaitingForm() async {
        let queue = OperationQueue()
        let order = Recorder<Int>()
        let operations = (0..<5).map { index in BlockOperation { order.append(index) } }
        await offThePool {
            queue.addSequentialOperations(operations, waitUntilFinished: true)
            // The waiting form returns only once every member finished.
            #expect(operations.allSatisfy { $0.isFinished })
        }
        #expect(order.all == Array(0..<5))
    }

    /// `cancelAllOperations()` cancels a queue's operations one at a time. Here the
    /// running member's `cancel()` returns only once the next member was cancelled or ran
    /// (10 s at most), which turns the rare race — the running member ends, and the next
    /// one starts before `cancelAllOperations()` reached it — into a certainty.
    @Test(arguments: [false, true])
    func cancelAllOperationsStopsTheRestOfASequence(onABackgroundOperationQueue: Bool) async {
        let queue = onABackgroundOperationQueue ? makeOperationQueue().0 : OperationQueue()
        let started = Signal()
        let ran = Recorder<Int>()
        let nextReached = DispatchSemaphore(value: 0)
        let rest = (1..<4).map { index in
            ReportsItsCancellation(reached: index == 1 ? nextReached : nil) { operation in
                ran.append(index)
                operation.finish()
            }
        }
        let first = WaitsForTheNextWhenCancelled(next: nextReached) { _ in started.signal() }
        let sequence = Task { await queue.addSequentialOperations([first] + rest) }
        await started.wait()
        await offThePool { queue.cancelAllOperations() }
        await sequence.value
        #expect(ran.count == 0)
        #expect(first.currentOutcome?.kind == .cancelled)
        #expect(rest.allSatisfy { $0.currentOutcome?.kind == .cancelled && $0.isFinished })
    }

    /// The queue receives a sequence's members last first (for `cancelAllOperations()`),
    /// but a ``BackgroundOperationQueue`` applies their uniqueness policies first to last.
    @Test func membersWithOneNameDeduplicateFirstToLast() async {
        let (queue, _) = makeOperationQueue()
        let ran = Recorder<String>()
        let members = ["kept", "dropped"].map { label in
            AsyncOperation(name: "x", uniquenessPolicy: .drop) { operation in
                ran.append(label)
                operation.finish()
            }
        }
        await queue.addSequentialOperations(members)
        #expect(ran.all == ["kept"])
        #expect(members.map { $0.currentOutcome?.kind } == [.finished, .dropped])
    }

    @Test func continuesAfterAFirstMemberThatNeverFinishesTimesOut() async {
        let queue = OperationQueue()
        let ran = Recorder<String>()
        let stuck = AsyncOperation(timeout: 0.05) { _ in ran.append("stuck") }
        let next = AsyncOperation { operation in
            ran.append("next")
            operation.finish()
        }
        await queue.addSequentialOperations([stuck, next])
        #expect(stuck.currentOutcome?.kind == .timedOut)
        #expect(next.currentOutcome?.kind == .finished)
        #expect(ran.all == ["stuck", "next"])
    }

    /// 1.x defect: a dropped member left the next one waiting forever.
    @Test func aDroppedMemberDoesNotHangTheRest() async {
        let (queue, _) = makeOperationQueue()
        let holderStarted = Signal()
        let releaseHolder = Signal()
        queue.addOperation(gatedOperation(name: "x", started: holderStarted, release: releaseHolder))
        await holderStarted.wait()
        let order = Recorder<String>()
        let first = AsyncOperation { operation in
            order.append("first")
            operation.finish()
        }
        let dropped = AsyncOperation(name: "x", uniquenessPolicy: .drop) { operation in
            order.append("dropped")
            operation.finish()
        }
        let last = AsyncOperation { operation in
            order.append("last")
            operation.finish()
        }
        await queue.addSequentialOperations([first, dropped, last])
        #expect(dropped.currentOutcome?.kind == .dropped)
        #expect(order.all == ["first", "last"])
        releaseHolder.signal()
        await queue.waitUntilIdle()
    }

    /// A cancelled member finishes at once, but the member after it still waits for the
    /// ones before it (plain dependencies would let it start right away).
    @Test func aCancelledMemberDoesNotLetTheNextOneOvertake() async {
        let queue = OperationQueue()
        let started = Signal()
        let release = Signal()
        let order = Recorder<String>()
        let first = AsyncOperation(timeout: .infinity) { operation in
            started.signal()
            Task {
                await release.wait()
                order.append("first")
                operation.finish()
            }
        }
        let middle = BlockOperation { order.append("middle") }
        let last = BlockOperation { order.append("last") }
        let sequence = Task { await queue.addSequentialOperations([first, middle, last]) }
        await started.wait()
        middle.cancel()
        await waitUntilFinished(middle)
        #expect(!last.isReady)
        #expect(!last.isExecuting && !last.isFinished)
        release.signal()
        await sequence.value
        #expect(order.all == ["first", "last"])
    }

    @Test func cancellingTheAwaitingTaskCancelsTheMembers() async {
        let queue = OperationQueue()
        let started = Signal()
        let first = gatedOperation(started: started, release: Signal())
        let second = BlockOperation {}
        let sequence = Task { await queue.addSequentialOperations([first, second]) }
        await started.wait()
        sequence.cancel()
        await sequence.value
        #expect(first.currentOutcome?.kind == .cancelled)
        #expect(second.isCancelled && second.isFinished)
    }
}

/// A member that signals `reached` when it is cancelled or runs its work.
private final class ReportsItsCancellation: AsyncOperation, @unchecked Sendable {
    private let reached: DispatchSemaphore?

    init(reached: DispatchSemaphore?, _ work: @escaping @Sendable (AsyncOperation) -> Void) {
        self.reached = reached
        super.init { operation in
            reached?.signal()
            work(operation)
        }
    }

    override func cancel() {
        super.cancel()
        reached?.signal()
    }
}

/// A member (with no timeout) whose `cancel()`, once it has ended the member, waits (10 s
/// at most) until `next` signals that the next member was cancelled or ran.
private final class WaitsForTheNextWhenCancelled: AsyncOperation, @unchecked Sendable {
    private let next: DispatchSemaphore

    init(next: DispatchSemaphore, _ work: @escaping @Sendable (AsyncOperation) -> Void) {
        self.next = next
        super.init(timeout: .infinity, work)
    }

    override func cancel() {
        super.cancel()
        _ = next.wait(timeout: .now() + 10)
    }
}
