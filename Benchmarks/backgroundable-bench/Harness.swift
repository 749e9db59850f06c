import Dispatch
import Foundation

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
/// `arrive()` happened.
final class Countdown: @unchecked Sendable {
    // @unchecked: `remaining` is only touched through `lock`; `done` is thread-safe.
    private let lock = NSLock()
    private var remaining: Int
    private let done = DispatchSemaphore(value: 0)

    init(_ count: Int) {
        remaining = count
    }

    func arrive() {
        lock.lock()
        remaining -= 1
        let last = remaining == 0
        lock.unlock()
        if last { done.signal() }
    }

    func wait() {
        done.wait()
    }
}

/// Runs `body` on a fresh thread and waits for it: measurements that block (waiting
/// for work to drain) must not block the cooperative pool that runs the work.
func onDedicatedThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    nonisolated(unsafe) var result: T?
    let finished = DispatchSemaphore(value: 0)
    let thread = Thread {
        result = body()
        finished.signal()
    }
    thread.stackSize = 8 << 20
    thread.start()
    finished.wait()
    return result!
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
