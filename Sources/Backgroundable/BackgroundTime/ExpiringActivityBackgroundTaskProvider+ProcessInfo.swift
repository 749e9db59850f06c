#if os(watchOS)
    import Foundation

    // Apple-only: not compiled on Linux. All logic is in the platform-neutral type.
    extension ExpiringActivityBackgroundTaskProvider {
        /// The provider backed by `ProcessInfo.processInfo.performExpiringActivity(withReason:using:)`.
        public static let shared = ExpiringActivityBackgroundTaskProvider { reason, block in
            ProcessInfo.processInfo.performExpiringActivity(withReason: reason, using: block)
        }
    }
#endif
