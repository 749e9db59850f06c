import Dispatch

#if canImport(Darwin)
    import Darwin
#endif

/// Main-thread helpers shared by the UIKit provider (through `MainThreadBackgroundTasks`)
/// and the macros' main-actor expiration handlers, so the logic they share is the logic
/// Linux tests run.
enum MainThread {
    /// `true` on the process's main thread (where the main actor runs).
    static var isCurrent: Bool {
        #if canImport(Darwin)
            pthread_main_np() != 0
        #else
            // Elsewhere the main actor runs on the main dispatch queue, which we tag.
            DispatchQueue.getSpecific(key: mainQueueKey) == true
        #endif
    }

    #if !canImport(Darwin)
        /// Set on the main queue once, the first time it is needed.
        private static let mainQueueKey: DispatchSpecificKey<Bool> = {
            let key = DispatchSpecificKey<Bool>()
            DispatchQueue.main.setSpecific(key: key, value: true)
            return key
        }()
    #endif

    /// Runs `body` on the main actor: right here when on the main thread (so an
    /// expiration handler the system calls on the main thread gets its work done
    /// before the handler returns), otherwise in a new main-actor task.
    static func runOrEnqueue(_ body: @escaping @MainActor @Sendable () -> Void) {
        if isCurrent {
            MainActor.assumeIsolated(body)
        } else {
            Task { @MainActor in body() }
        }
    }
}
