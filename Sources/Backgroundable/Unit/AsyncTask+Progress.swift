import Synchronization

extension AsyncTask {
    /// The unit whose async body is running: set for the body's `Task` and the child
    /// tasks it creates (`async let`, task groups), `nil` elsewhere. Read it once, then
    /// report through it:
    ///
    /// ```swift
    /// let result = try await queue.run(.init(name: "import")) {
    ///     let unit = AsyncTask.current
    ///     for (index, file) in files.enumerated() {
    ///         try await importFile(file)
    ///         unit?.reportProgress(completed: index + 1, of: files.count)
    ///     }
    ///     return files.count
    /// }
    /// ```
    ///
    /// A callback-style unit is handed its unit as its closure's argument instead.
    @TaskLocal public static var current: AsyncTask?

    /// Reports how far the unit's current attempt got, from 0 (nothing done) to 1 (all
    /// done); its queue's ``BackgroundQueue/progress`` counts it while it executes.
    ///
    /// Cheap enough for a tight loop and callable from any thread: a report is a plain
    /// store into the unit, with no lock and no queue involved. Reading
    /// ``BackgroundQueue/progress`` reads it; watchers sample it, ten times a second while
    /// the unit executes (see ``BackgroundQueue/progressUpdates``). The latest report
    /// wins; it need not grow.
    ///
    /// A fraction below 0 counts as 0 and above 1 as 1; NaN is ignored. A retried unit
    /// starts each attempt with no progress. A report after the unit ended changes
    /// ``fractionCompleted`` only: an ended unit counts as done in its queue.
    @inlinable public func reportProgress(_ fractionCompleted: Double) {
        guard !fractionCompleted.isNaN else { return }
        storeProgress(Self.progressBits(Swift.min(Swift.max(fractionCompleted, 0), 1)))
    }

    /// Reports progress as `completed` of `total` units of the unit's own (files,
    /// bytes, pages): ``reportProgress(_:)`` with `completed / total`. A `total` of 0 or
    /// less is ignored; `completed` is kept within `0...total`.
    @inlinable public func reportProgress(completed: Int, of total: Int) {
        guard total > 0 else { return }
        storeProgress(Self.progressBits(Double(Swift.min(Swift.max(completed, 0), total)) / Double(total)))
    }

    /// A fraction within 0...1 as ``progressBits`` holds it, rounded by adding a half
    /// (`rounded()` is a libm call). Inlinable with the two report methods, so that a
    /// caller's loop of reports keeps its arithmetic in the loop
    /// (`e2e.BackgroundQueue.asyncBody.progress100` measures it).
    @inlinable static func progressBits(_ fraction: Double) -> UInt32 {
        UInt32(fraction * progressScale + 0.5) + 1
    }

    /// Stores a report: one relaxed store, which only this unit's ``fractionCompleted``
    /// and its queue's samples read.
    @usableFromInline func storeProgress(_ bits: UInt32) {
        progressBits.store(bits, ordering: .relaxed)
    }

    /// The latest progress the current attempt reported, from 0 to 1; `nil` until it
    /// reports. Safe to read from any thread.
    public var fractionCompleted: Double? {
        let bits = progressBits.load(ordering: .relaxed)
        return bits == 0 ? nil : Double(bits - 1) / Self.progressScale
    }

    /// ``progressBits`` holds the fraction in billionths: decimal fractions read back as
    /// they were reported (0.1 is 0.1), and 10⁹ + 1 fits in 32 bits.
    @usableFromInline static var progressScale: Double { 1_000_000_000 }
}
