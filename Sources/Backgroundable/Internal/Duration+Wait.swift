extension Duration {
    /// The longest wait the package keeps: `Int64.max` nanoseconds, about 292 years.
    /// Timeouts, start times, retry delays and shutdown periods saturate to it (a
    /// `Task.sleep` until an instant much further away traps).
    static let longestWait = Duration.nanoseconds(Int64.max)

    /// This duration as a wait: negative counts as zero, longer than ``longestWait`` as
    /// ``longestWait``.
    var clampedToWait: Duration {
        min(max(.zero, self), .longestWait)
    }
}
