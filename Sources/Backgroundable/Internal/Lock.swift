#if BACKGROUNDABLE_PTHREAD_LOCK
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #elseif canImport(Darwin)
        import Darwin
    #endif

    /// The package's lock, in builds for the thread sanitizer (`-DBACKGROUNDABLE_PTHREAD_LOCK`).
    ///
    /// `Synchronization.Mutex` on Linux parks threads with raw futex calls, which the
    /// thread sanitizer cannot see, so it reports every access guarded by a `Mutex` as a
    /// race. In sanitizer builds this `pthread_mutex_t`-backed lock, with the same API,
    /// takes its place, so the sanitizer checks the real locking discipline. Production
    /// builds use `Mutex` (below).
    ///
    /// `@unchecked Sendable`: `value` is only reached through `withLock`, while `mutex` is held.
    package struct Lock<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
        private let mutex: UnsafeMutablePointer<pthread_mutex_t>
        private let value: UnsafeMutablePointer<Value>

        package init(_ initialValue: consuming sending Value) {
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
            value = .allocate(capacity: 1)
            value.initialize(to: initialValue)
        }

        deinit {
            value.deinitialize(count: 1)
            value.deallocate()
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }

        package borrowing func withLock<Result: ~Copyable, E: Error>(
            _ body: (inout Value) throws(E) -> Result
        ) throws(E) -> Result {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&value.pointee)
        }
    }
#else
    package import Synchronization

    /// The package's lock: `Synchronization.Mutex`. Thread-sanitizer builds swap in a
    /// `pthread_mutex_t`-backed lock with the same API (see the `BACKGROUNDABLE_PTHREAD_LOCK` branch).
    package typealias Lock<Value: ~Copyable> = Mutex<Value>
#endif
