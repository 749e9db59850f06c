import Backgroundable
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Durable jobs on a `FileJobStore` in a fresh temporary directory (on the machine's
/// disk: its `fdatasync` is most of what a durable add costs). `jobs` jobs per repetition.
///
/// - `durable.fsync.floor`: what every durable add must pay at the least — write 300
///   bytes into a block of a file made and flushed beforehand, and `fdatasync` it — with
///   no library involved. The durable scenarios are compared with it.
/// - `durable.fsync.newFile`: the same 300 bytes as a file of their own — write a
///   temporary file, `fdatasync` it, rename it into place, `fsync` the directory — as a
///   `FileJobStore` stores a job too large for a slot.
/// - `durable.file.enqueue`: the caller's cost of one `add` (stored before it returns).
/// - `durable.file.e2e`: add, claim, run a no-op handler, and remove, per job.
func durableScenarios(jobs: Int) -> [Scenario] {
    [
        Scenario(id: "durable.fsync.floor", unit: "ns/unit", baseline: nil) { _ in
            withScratchDirectory { directory in
                let file = open("\(directory)/slab", O_RDWR | O_CREAT | O_TRUNC, 0o644)
                defer { close(file) }
                let blocks = 256
                let zeros = [UInt8](repeating: 0, count: blocks * 4096)
                _ = zeros.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
                fsync(file)
                let bytes = [UInt8](repeating: 0x41, count: 300)
                let start = now()
                for index in 0..<jobs {
                    _ = bytes.withUnsafeBytes { pwrite(file, $0.baseAddress, $0.count, off_t(index % blocks * 4096)) }
                    fdatasync(file)
                }
                return perUnit(start, now(), jobs)
            }
        },
        Scenario(id: "durable.fsync.newFile", unit: "ns/unit", baseline: ("durable.fsync.floor", nil)) { _ in
            withScratchDirectory { directory in
                let folder = open(directory, O_RDONLY | O_DIRECTORY)
                defer { close(folder) }
                let bytes = [UInt8](repeating: 0x41, count: 300)
                let start = now()
                for index in 0..<jobs {
                    let path = "\(directory)/\(index).job"
                    let file = open(path + ".tmp", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                    _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
                    fdatasync(file)
                    close(file)
                    rename(path + ".tmp", path)
                    fsync(folder)
                }
                return perUnit(start, now(), jobs)
            }
        },
        Scenario(id: "durable.file.enqueue", unit: "ns/unit", baseline: ("durable.fsync.floor", nil)) { _ in
            withScratchDirectory { directory in
                nonisolated(unsafe) var elapsed = 0.0  // written before blockingWait returns
                blockingWait {
                    let queue = DurableQueue(
                        store: try! await FileJobStore(directory: URL(fileURLWithPath: directory)),
                        queue: BackgroundQueue(name: "bench"))
                    let start = now()
                    for index in 0..<jobs { try! await queue.add(.benchmark, index) }
                    elapsed = perUnit(start, now(), jobs)
                }
                return elapsed
            }
        },
        Scenario(id: "durable.file.e2e", unit: "ns/unit", baseline: ("durable.fsync.floor", nil)) { _ in
            withScratchDirectory { directory in
                nonisolated(unsafe) var elapsed = 0.0  // written before blockingWait returns
                blockingWait {
                    let queue = DurableQueue(
                        store: try! await FileJobStore(directory: URL(fileURLWithPath: directory)),
                        queue: BackgroundQueue(name: "bench", maxConcurrentTasks: 4))
                    queue.register(.benchmark) { _, _ in }
                    let start = now()
                    for index in 0..<jobs { try! await queue.add(.benchmark, index) }
                    await queue.runUntilIdle()
                    elapsed = perUnit(start, now(), jobs)
                }
                return elapsed
            }
        },
    ]
}

extension DurableJobKind where Payload == Int {
    fileprivate static let benchmark = DurableJobKind("benchmark")
}

private func perUnit(_ start: UInt64, _ end: UInt64, _ units: Int) -> Double {
    Double(end - start) / Double(units)
}

/// Runs `body` with a new directory under the temporary directory, then removes it.
private func withScratchDirectory(_ body: (String) -> Double) -> Double {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return body(directory.path)
}
