/// A unit's timeout as the unit keeps it: whole nanoseconds in 8 bytes (`Int64.min` for
/// none), which the queue's deadline arithmetic reads as they are; in a build with
/// `-DBACKGROUNDABLE_PLAIN_LAYOUT`, the `Duration?` itself (24 bytes), converted at each
/// admission. Either way it reads back saturated as ``AsyncTask/nanoseconds(_:)`` does.
struct StoredTimeout: Sendable {
    #if BACKGROUNDABLE_PLAIN_LAYOUT
        let duration: Duration?

        init(_ duration: Duration?) {
            self.duration = duration.map { .nanoseconds(AsyncTask.nanoseconds($0)) }
        }

        /// The timeout in the queue clock's nanoseconds; `nil` for none.
        var nanoseconds: Int64? { duration.map(AsyncTask.nanoseconds) }
    #else
        private let bits: Int64

        init(_ duration: Duration?) {
            bits = duration.map(AsyncTask.nanoseconds) ?? .min
        }

        var duration: Duration? { bits == .min ? nil : .nanoseconds(bits) }
        /// The timeout in the queue clock's nanoseconds; `nil` for none.
        var nanoseconds: Int64? { bits == .min ? nil : bits }
    #endif
}
