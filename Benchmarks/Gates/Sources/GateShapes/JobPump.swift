import Foundation

// Swift concurrency's global executor, taken over: every job it is given (a task
// created, resumed, or woken from a sleep) waits in a FIFO until the measuring thread
// runs it, in `JobPump.run(until:)`. Work of the library and of bare tasks then runs on
// one thread in one order, so its allocations and instructions are the same on every
// run. (On the default executor they are not: libdispatch allocates a continuation for
// a job enqueued from a thread whose cache is empty, and how often depends on which
// thread ran what, by as much as the one allocation per unit a gate must catch.)
// swift-nio takes over the executor through the same runtime hooks.

typealias EnqueueOriginal = @convention(thin) (UnownedJob) -> Void
typealias EnqueueHook = @convention(thin) (UnownedJob, EnqueueOriginal) -> Void
typealias DelayOriginal = @convention(thin) (UInt64, UnownedJob) -> Void
typealias DelayHook = @convention(thin) (UInt64, UnownedJob, DelayOriginal) -> Void
typealias DeadlineOriginal = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob) -> Void
typealias DeadlineHook = @convention(thin) (Int64, Int64, Int64, Int64, Int32, UnownedJob, DeadlineOriginal) -> Void

/// The generic executor (no actor; two null words), on which the default executor's
/// threads run global jobs.
private let genericExecutor = unsafeBitCast((0, 0), to: UnownedSerialExecutor.self)

final class JobPump: @unchecked Sendable {
    // @unchecked: every stored property is read and written under `condition`'s lock.
    static let shared = JobPump()

    private let condition = NSCondition()
    /// Ready jobs, a ring allocated once: taking and adding jobs never allocates, so
    /// the pump adds nothing to what is counted.
    private let ring: UnsafeMutablePointer<UnownedJob?>
    private let capacity = 1 << 21
    private var head = 0
    private var count = 0
    /// Jobs waiting for a deadline (nanoseconds of CLOCK_MONOTONIC), in no order.
    private var delayed: [(deadline: UInt64, job: UnownedJob)] = []

    private init() {
        ring = .allocate(capacity: capacity)
        ring.initialize(repeating: nil, count: capacity)
        delayed.reserveCapacity(4096)
    }

    /// Installs the hooks; call once, before the first task is created.
    static func install() {
        _ = shared
        hook("swift_task_enqueueGlobal_hook", as: EnqueueHook.self).pointee = { job, _ in
            JobPump.shared.enqueue(job)
        }
        hook("swift_task_enqueueGlobalWithDelay_hook", as: DelayHook.self).pointee = { delay, job, _ in
            JobPump.shared.enqueue(job, deadline: JobPump.monotonicNow() &+ delay)
        }
        hook("swift_task_enqueueGlobalWithDeadline_hook", as: DeadlineHook.self).pointee = {
            seconds, nanoseconds, _, _, clock, job, _ in
            JobPump.shared.enqueue(job, deadline: JobPump.monotonicDeadline(seconds, nanoseconds, clock: clock))
        }
    }

    /// The runtime's hook variable `name` (a function pointer, `nil` when unset).
    private static func hook<Hook>(_ name: String, as type: Hook.Type) -> UnsafeMutablePointer<Hook> {
        guard let address = dlsym(dlopen(nil, RTLD_NOW), name) else {
            fatalError("the Swift runtime has no \(name)")
        }
        return address.assumingMemoryBound(to: Hook.self)
    }

    private func enqueue(_ job: UnownedJob) {
        condition.lock()
        precondition(count < capacity, "more than \(capacity) jobs waiting")
        ring[(head + count) & (capacity - 1)] = job
        count += 1
        condition.signal()
        condition.unlock()
    }

    private func enqueue(_ job: UnownedJob, deadline: UInt64) {
        condition.lock()
        delayed.append((deadline, job))
        condition.signal()
        condition.unlock()
    }

    /// Runs jobs on this thread until `done()` holds and no job is ready; waits for
    /// jobs of other threads and for deadlines in between. `done()` runs outside the
    /// lock: it may take locks of its own that a thread holds while it enqueues a job.
    func run(until done: () -> Bool) {
        while true {
            condition.lock()
            let job = takeJob()
            condition.unlock()
            if let job {
                job.runSynchronously(on: genericExecutor)
            } else if done() {
                return
            } else {
                condition.lock()
                if count == 0 { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.001)) }
                condition.unlock()
            }
        }
    }

    /// The oldest ready job, or the first delayed job whose deadline has passed.
    private func takeJob() -> UnownedJob? {
        if count > 0 {
            let job = ring[head]
            ring[head] = nil
            head = (head + 1) & (capacity - 1)
            count -= 1
            return job
        }
        guard !delayed.isEmpty else { return nil }
        let now = Self.monotonicNow()
        guard let index = delayed.firstIndex(where: { $0.deadline <= now }) else { return nil }
        return delayed.remove(at: index).job
    }

    private static func monotonicNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// A deadline on one of the runtime's clocks (1: continuous, CLOCK_BOOTTIME on
    /// Linux; 2: suspending, CLOCK_MONOTONIC) as nanoseconds of CLOCK_MONOTONIC.
    private static func monotonicDeadline(_ seconds: Int64, _ nanoseconds: Int64, clock: Int32) -> UInt64 {
        var now = timespec()
        clock_gettime(clock == 1 ? CLOCK_BOOTTIME : CLOCK_MONOTONIC, &now)
        let remaining = (seconds - Int64(now.tv_sec)) * 1_000_000_000 + (nanoseconds - Int64(now.tv_nsec))
        return monotonicNow() &+ UInt64(max(0, remaining))
    }
}
