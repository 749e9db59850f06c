import Synchronization

/// One background-time assertion: begun once, ended exactly once — by ``end()`` or,
/// if the provider takes the time back first, inside its expiration handler, which
/// then calls the `onExpiration` closure given to ``begin(named:provider:onExpiration:)``.
///
/// This is the runtime behind the `@Backgroundable` macro and
/// ``withBackgroundTime(named:provider:operation:onExpiration:)``: begin before the
/// work, ``end()`` in a `defer`.
///
/// All members are thread-safe. ``end()`` is idempotent. An expiration that races
/// with ``end()`` is resolved under a lock: exactly one of them ends the assertion,
/// and `onExpiration` runs only if the expiration won. An assertion released without
/// ``end()`` ends itself as it is deinitialized: it never leaks the system's assertion.
public final class BackgroundTimeAssertion: Sendable {
    /// The name the assertion was begun with.
    public let name: String
    private let time: HeldBackgroundTime

    /// Begins an assertion.
    ///
    /// - Parameters:
    ///   - name: Shown by the platform (for example in Xcode's debugger).
    ///   - provider: Where the assertion comes from.
    ///   - onExpiration: Runs at most once, on the provider's thread, after the
    ///     assertion was ended because its time ran out. Cancel or save work here.
    public static func begin(
        named name: String,
        provider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make(),
        onExpiration: @escaping @Sendable () -> Void = {}
    ) -> BackgroundTimeAssertion {
        BackgroundTimeAssertion(name: name, time: .begin(named: name, provider: provider, onExpiration: onExpiration))
    }

    private init(name: String, time: HeldBackgroundTime) {
        self.name = name
        self.time = time
    }

    /// An assertion dropped without ``end()`` ends itself: the system's assertion never
    /// outlives the object that stands for it.
    deinit {
        time.end()
    }

    /// `true` until the assertion ended or expired.
    public var isHeld: Bool { time.isHeld }

    /// Ends the assertion. Idempotent; does nothing after it expired.
    public func end() {
        time.end()
    }
}

/// The state of one begun assertion, shared by its owner (a ``BackgroundTimeAssertion``,
/// or a queue for its busy period) and the provider's expiration handler, which holds
/// it strongly: the owner can be released (and end it) while the provider still holds
/// the handler, and no weak reference is needed.
final class HeldBackgroundTime: Sendable {
    private enum State {
        /// `beginBackgroundTask` has not returned yet.
        case beginning(endRequested: Bool, expired: Bool)
        case held(BackgroundTaskIdentifier?)
        case ended
        case expired
    }

    /// Who hears that the time expired.
    private enum Expiry {
        case call(@Sendable () -> Void)
        /// A queue, told which of its busy periods the time was for (kept here rather than
        /// captured, which would cost the queue an allocation per busy period).
        case period(UInt64, @Sendable (UInt64) -> Void)

        func notify() {
            switch self {
            case .call(let handler): handler()
            case .period(let period, let handler): handler(period)
            }
        }
    }

    private let provider: any BackgroundTaskProvider
    private let expiry: Expiry
    private let state = Lock(State.beginning(endRequested: false, expired: false))

    private init(provider: any BackgroundTaskProvider, expiry: Expiry) {
        self.provider = provider
        self.expiry = expiry
    }

    /// Asks `provider` for background time; see ``BackgroundTimeAssertion/begin(named:provider:onExpiration:)``.
    static func begin(
        named name: String,
        provider: any BackgroundTaskProvider,
        onExpiration: @escaping @Sendable () -> Void
    ) -> HeldBackgroundTime {
        begin(named: name, provider: provider, expiry: .call(onExpiration))
    }

    /// Asks `provider` for the background time of a queue's busy `period`: on expiry,
    /// `onExpiration` is called with `period`.
    static func begin(
        named name: String,
        provider: any BackgroundTaskProvider,
        period: UInt64,
        onExpiration: @escaping @Sendable (UInt64) -> Void
    ) -> HeldBackgroundTime {
        begin(named: name, provider: provider, expiry: .period(period, onExpiration))
    }

    private static func begin(
        named name: String, provider: any BackgroundTaskProvider, expiry: Expiry
    ) -> HeldBackgroundTime {
        let time = HeldBackgroundTime(provider: provider, expiry: expiry)
        let identifier = provider.beginBackgroundTask(named: name) { time.expire() }
        let outcome = time.state.withLock { state -> (end: Bool, expired: Bool) in
            guard case .beginning(let endRequested, let expired) = state else { return (false, false) }
            state = endRequested ? .ended : expired ? .expired : .held(identifier)
            return (endRequested || expired, expired)
        }
        if outcome.end, let identifier {
            provider.endBackgroundTask(identifier)
        }
        if outcome.expired {
            expiry.notify()
        }
        return time
    }

    /// `true` until it ended or expired.
    var isHeld: Bool {
        state.withLock {
            switch $0 {
            case .beginning(let endRequested, let expired): !endRequested && !expired
            case .held: true
            case .ended, .expired: false
            }
        }
    }

    /// Ends it. Idempotent; does nothing after it expired.
    func end() {
        let identifier = state.withLock { state -> BackgroundTaskIdentifier? in
            switch state {
            case .beginning(_, let expired):
                state = .beginning(endRequested: true, expired: expired)
                return nil
            case .held(let identifier):
                state = .ended
                return identifier
            case .ended, .expired:
                return nil
            }
        }
        if let identifier {
            provider.endBackgroundTask(identifier)
        }
    }

    /// The provider's expiration handler: ends it right here, then runs
    /// `onExpiration` — unless ``end()`` came first.
    private func expire() {
        let (identifier, notify) = state.withLock { state -> (BackgroundTaskIdentifier?, Bool) in
            switch state {
            case .beginning(let endRequested, _):
                state = .beginning(endRequested: endRequested, expired: !endRequested)
                return (nil, false)  // `begin` ends it and notifies once the identifier is known
            case .held(let identifier):
                state = .expired
                return (identifier, true)
            case .ended, .expired:
                return (nil, false)
            }
        }
        if let identifier {
            provider.endBackgroundTask(identifier)
        }
        if notify {
            expiry.notify()
        }
    }
}

/// Runs `operation` while holding a background-time assertion: begun before it, ended
/// when it returns, throws or is cancelled.
///
/// - Parameters:
///   - name: The assertion's name.
///   - provider: Where the assertion comes from.
///   - isolation: The caller's actor, inherited so `operation` runs where the caller does.
///   - operation: The work. Runs on the caller's isolation.
///   - onExpiration: Runs at most once, after the assertion was ended because its
///     time ran out while `operation` was still running.
public func withBackgroundTime<Result, Failure: Error>(
    named name: String,
    provider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make(),
    isolation: isolated (any Actor)? = #isolation,
    operation: () async throws(Failure) -> Result,
    onExpiration: @escaping @Sendable () -> Void = {}
) async throws(Failure) -> Result {
    let assertion = BackgroundTimeAssertion.begin(named: name, provider: provider, onExpiration: onExpiration)
    defer { assertion.end() }
    return try await operation()
}

/// The synchronous form of ``withBackgroundTime(named:provider:isolation:operation:onExpiration:)``.
public func withBackgroundTime<Result, Failure: Error>(
    named name: String,
    provider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make(),
    operation: () throws(Failure) -> Result,
    onExpiration: @escaping @Sendable () -> Void = {}
) throws(Failure) -> Result {
    let assertion = BackgroundTimeAssertion.begin(named: name, provider: provider, onExpiration: onExpiration)
    defer { assertion.end() }
    return try operation()
}
