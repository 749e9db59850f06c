import Dispatch
import Foundation
import Synchronization

/// One measured scenario: a value per repetition, summarised by its median.
struct Measurement {
    let id: String
    let unit: String
    let samples: [Double]

    var sorted: [Double] { samples.sorted() }
    var median: Double {
        let values = sorted
        let middle = values.count / 2
        return values.count % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2
    }
    var min: Double { sorted.first ?? 0 }
    var max: Double { sorted.last ?? 0 }
}

/// Wall-clock nanoseconds, from `DispatchTime`.
func now() -> UInt64 {
    DispatchTime.now().uptimeNanoseconds
}

/// Resident memory of this process, in bytes (Linux: /proc/self/statm).
func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Gives freed heap memory back to the system, so an RSS delta measures new memory.
func trimHeap() {
    #if os(Linux)
        _ = mallocTrim(0)
    #endif
}

#if os(Linux)
    @_silgen_name("malloc_trim")
    private func mallocTrim(_ pad: Int) -> Int32
#endif

/// Waits (blocking this thread, never a cooperative one) until `count` calls to
/// `arrive()` happened. Arriving is one atomic decrement: the harness never blocks
/// the threads whose work it measures.
final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let done = DispatchSemaphore(value: 0)

    init(_ count: Int) {
        remaining = Atomic(count)
    }

    func arrive() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            done.signal()
        }
    }

    func wait() {
        done.wait()
    }
}

/// The one thread every repetition runs on, started once.
///
/// Measurements block (waiting for work to drain), so they must not run on the
/// cooperative pool that runs the work. They all run on this one long-lived thread, as
/// an app's enqueues come from its long-lived threads: a fresh thread per repetition
/// would get a fresh malloc arena too, and every repetition would start from a cold
/// heap, paying page faults that depend on how many arenas happen to be free.
final class MeasuringThread: @unchecked Sendable {
    // @unchecked: `job` is written by the caller before `jobReady.signal()` and read by
    // the thread after `jobReady.wait()`; the semaphores order every access.
    private var job: (@Sendable () -> Void)?
    private let jobReady = DispatchSemaphore(value: 0)
    private let jobDone = DispatchSemaphore(value: 0)

    init() {
        // The thread keeps `self` for the life of the process: it never exits.
        let thread = Thread { [self] in
            while true {
                jobReady.wait()
                job?()
                job = nil
                jobDone.signal()
            }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// Runs `body` on the measuring thread and waits for its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        nonisolated(unsafe) var result: T?
        job = { result = body() }
        jobReady.signal()
        jobDone.wait()
        return result!
    }
}

/// Runs a blocking wait for async work from synchronous code.
func blockingWait(_ body: @escaping @Sendable () async -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await body()
        done.signal()
    }
    done.wait()
}
