import BackgroundableTesting
import Testing

@testable import Backgroundable

@Suite("Sequential groups")
struct SequenceTests {
    @Test func membersRunOneAfterAnotherInOrder() async {
        let (queue, _) = makeQueue()
        let order = Recorder<Int>()
        let gauge = Gauge()
        let units = (0..<20).map { index in
            AsyncTaskHandle {
                gauge.enter()
                order.append(index)
                await Task.yield()
                gauge.leave()
            }.task
        }
        queue.addSequence(units)
        await queue.waitUntilIdle()
        #expect(order.all == Array(0..<20))
        #expect(gauge.maximum == 1)
    }

    @Test func droppedCancelledAndTimedOutMembersNeverHangTheGroup() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let holder = queue.add(.init(name: "taken")) { $0.finish() }
        let order = Recorder<String>()
        func member(
            _ label: String, name: String? = nil, policy: UniquenessPolicy = .ignore, timeout: Duration? = .seconds(10),
            finishes: Bool = true
        ) -> AsyncTask {
            AsyncTask(.init(name: name, timeout: timeout, uniquenessPolicy: policy)) { task in
                order.append(label)
                if finishes { task.finish() }
            }
        }
        let first = member("first")
        let dropped = member("dropped", name: "taken", policy: .drop)
        let timesOut = member("timesOut", timeout: .milliseconds(50), finishes: false)
        let cancelled = member("cancelled")
        let last = member("last")
        queue.addSequence([first, dropped, timesOut, cancelled, last])
        #expect(dropped.currentOutcome?.kind == .dropped)
        cancelled.cancel()
        queue.resume()
        #expect(await last.outcome.kind == .finished)
        // `timesOut` may time out before its body even ran (a slow machine); it never
        // runs after `last`.
        #expect(order.all.filter { $0 != "timesOut" } == ["first", "last"])
        #expect(order.all.last == "last")
        #expect(timesOut.currentOutcome?.kind == .timedOut)
        #expect(cancelled.currentOutcome?.kind == .cancelled)
        _ = await holder.outcome
    }

    @Test func aFailedMemberDoesNotStopTheGroup() async throws {
        let (queue, _) = makeQueue()
        let failing = AsyncTaskHandle { () async throws -> Void in throw TestError(code: 1) }
        let next = AsyncTaskHandle { "ran" }
        queue.addSequence([failing.task, next.task])
        #expect(try await next.value == "ran")
        #expect(await failing.outcome.kind == .failed)
    }

    @Test func membersWaitWhileBlockedAndCountAsEnqueued() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let first = AsyncTask(.init(timeout: nil)) { _ in started.signal() }
        let second = AsyncTask { $0.finish() }
        queue.addSequence([first, second])
        await started.wait()
        #expect(queue.executingCount == 1)
        #expect(queue.enqueuedCount == 1)
        #expect(!second.isExecuting)
        first.finish()
        #expect(await second.outcome.kind == .finished)
    }

    @Test func cancelAllCancelsBlockedMembers() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let first = AsyncTask(.init(timeout: nil)) { _ in started.signal() }
        let units = [first] + (0..<5).map { _ in AsyncTask { $0.finish() } }
        queue.addSequence(units)
        await started.wait()
        queue.cancelAll()
        for unit in units {
            #expect(await unit.outcome.kind == .cancelled)
        }
        await queue.waitUntilIdle()
        #expect(queue.enqueuedCount == 0)
    }

    @Test func replacingABlockedMemberRelinksTheGroup() async {
        let (queue, _) = makeQueue()
        let order = Recorder<String>()
        let started = Signal()
        let a = AsyncTask(.init(timeout: nil)) { _ in
            order.append("a")
            started.signal()
        }
        let b = AsyncTask(.init(name: "b")) { task in
            order.append("b")
            task.finish()
        }
        let c = AsyncTask { task in
            order.append("c")
            task.finish()
        }
        queue.addSequence([a, b, c])
        await started.wait()
        let replacement = queue.add(.init(name: "b", uniquenessPolicy: .replace)) { task in
            order.append("b2")
            task.finish()
        }
        #expect(b.currentOutcome?.kind == .replaced)
        _ = await replacement.outcome
        #expect(!c.isFinished)
        a.finish()
        #expect(await c.outcome.kind == .finished)
        #expect(!order.all.contains("b"))
        #expect(order.all.last == "c")
    }
}
