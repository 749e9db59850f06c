extension AsyncTask {
    /// The settings of a unit, as one value to keep and reuse: its name, timeout,
    /// priority, uniqueness policy, start time, lane, retry policy, `onTimeout` callback
    /// and end hook (``onEnd``).
    ///
    /// Every entry point that makes a unit takes one as its first argument, and uses
    /// the defaults when it is left out: ``BackgroundQueue``'s `add(_:_:)` (a callback
    /// or a body), ``BackgroundQueue/run(_:_:)``, ``AsyncTask/init(_:_:)``,
    /// ``AsyncTaskHandle/init(_:_:)`` and ``AsyncTask/init(operation:options:)``.
    ///
    /// ```swift
    /// let upload = AsyncTask.Options(name: "upload", timeout: .seconds(60), priority: .utility)
    /// let receipt = try await uploads.run(upload) { try await api.upload(photo) }
    /// ```
    public struct Options: Sendable {
        /// A label for debuggers (the wrapping `Task` carries it) and the key of
        /// name-based deduplication; `nil` never deduplicates.
        public var name: String?
        /// The priority of the wrapping `Task`; the queue starts higher priorities first.
        /// A priority whose raw value is 0 (the runtime's "unspecified") reads back as
        /// `nil`, as ``AsyncTask/priority`` does.
        public var priority: TaskPriority? {
            get { priorityRawValue == 0 ? nil : TaskPriority(rawValue: priorityRawValue) }
            set { priorityRawValue = newValue?.rawValue ?? 0 }
        }
        /// ``priority`` as its raw value, 0 for none: an `Optional` of the resilient
        /// `TaskPriority` would make every copy of the options a runtime call.
        private(set) var priorityRawValue: UInt8 = 0
        /// What a queue does when a live unit already has the same name.
        public var uniquenessPolicy: UniquenessPolicy
        /// The earliest time the unit may start once added (see ``StartTime``); `nil`
        /// for as soon as its queue can.
        public var notBefore: StartTime? {
            get { extras?.notBefore }
            set {
                extras = .make(
                    onTimeout: onTimeout, notBefore: newValue, lane: extras?.lane, retry: retry, onEnd: onEnd)
            }
        }
        /// The unit's lane: the units of one lane run one at a time, in the order they
        /// were added, while units of different lanes (and units of none) run in
        /// parallel, up to the queue's limit. Independent of ``name``: a lane orders, a
        /// name deduplicates. Ignored for the members of ``BackgroundQueue/addSequence(_:)``,
        /// which are a lane of their own.
        ///
        /// The key is any `Hashable & Sendable` value — a string, an account's `UUID`,
        /// an enum case. Equal values of one type share a lane; values of different
        /// types never do (`1` and `"1"`, or an `Int` 1 and a `UInt8` 1, are two lanes).
        public var lane: (any Hashable & Sendable)? {
            get { extras?.lane?.value }
            set {
                extras = .make(
                    onTimeout: onTimeout, notBefore: notBefore, lane: newValue.map { LaneKey($0) }, retry: retry,
                    onEnd: onEnd)
            }
        }
        /// What happens when the unit's async body throws (see ``RetryPolicy``); `nil`
        /// for its queue's default (none unless the queue sets one). A callback-style
        /// unit has no error to retry on: it ignores this.
        public var retry: RetryPolicy? {
            get { extras?.retry }
            set {
                extras = .make(
                    onTimeout: onTimeout, notBefore: notBefore, lane: extras?.lane, retry: newValue, onEnd: onEnd)
            }
        }
        /// Runs exactly once, after the outcome became ``Outcome/timedOut``, in a task of
        /// its own: off every actor, or on the one it is isolated to
        /// (`{ @MainActor task in … }`).
        public var onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? {
            get { extras?.onTimeout }
            set {
                extras = .make(
                    onTimeout: newValue, notBefore: notBefore, lane: extras?.lane, retry: retry, onEnd: onEnd)
            }
        }
        /// The unit's end hook: runs exactly once when the unit ends, with its final
        /// outcome, whatever the outcome and whether or not its work ever started — a unit
        /// cancelled, dropped, replaced or timed out before it started (or added to a queue
        /// that stopped accepting work) runs it too. Each unit made from these options
        /// runs it once, with its own outcome. A server that claimed the unit's work from
        /// another system acknowledges it here, or gives it back when the outcome says it
        /// did not complete (see <doc:RunningInAServer>).
        ///
        /// Concurrency contract:
        /// - It is synchronous and cannot throw. It runs on the thread that ends the unit —
        ///   the caller of ``AsyncTask/cancel()`` or ``AsyncTask/finish()``, the unit's
        ///   `Task` when its body returns, the queue's timer for a timeout, the add that
        ///   dropped or replaced it, the `cancelAll()`, expiry or `deinit` of its queue —
        ///   outside every lock of the library, isolated to no actor: to reach one, or to
        ///   do async work, start a `Task` from it. It must not block: the unit's queue and
        ///   its awaiting callers wait for it to return.
        /// - It runs after the outcome is set (``AsyncTask/currentOutcome`` reads it), and
        ///   before anything else the end does: before the unit's queue forgets it (so a
        ///   queue is never idle while the hook of a unit it held runs), before its `Task`
        ///   is cancelled, and before the callers awaiting its outcome resume (also those
        ///   that come while it runs). One exception: a unit whose timeout is zero or less
        ///   expires as it would start, and its queue lets it go in that step (its
        ///   successor in a lane or sequence may start at once); its hook runs just after.
        /// - A unit that ended by itself (``AsyncTask/finish()``, ``AsyncTask/cancel()``,
        ///   its body's return) still holds its name meanwhile: a unit of the same name
        ///   that the hook adds to the same queue meets it — ``UniquenessPolicy/drop``
        ///   drops the newcomer, ``UniquenessPolicy/join`` ends it with this outcome — so
        ///   re-add work with ``UniquenessPolicy/replace`` or ``UniquenessPolicy/ignore``.
        ///   A unit its queue ended (a timeout, a `cancelAll`, a replacement) gave its name
        ///   up in that step; a newcomer of the name waits for a body that still runs.
        /// - A unit released without ever being added to a queue (or started by a front
        ///   end) never ran: it runs the hook with ``Outcome/cancelled`` as it is
        ///   deinitialised, on the thread that released it.
        ///
        /// Give it the values it needs, not the unit: a hook that captures its own unit
        /// keeps it alive. Unused, it costs nothing: no allocation, no atomic operation.
        public var onEnd: (@Sendable (AsyncTask.Outcome) -> Void)? {
            get { extras?.onEnd }
            set {
                extras = .make(
                    onTimeout: onTimeout, notBefore: notBefore, lane: extras?.lane, retry: retry, onEnd: newValue)
            }
        }
        /// The settings few units have, in the one immutable box every unit made from
        /// these options shares: reusing an `Options` value allocates nothing per unit
        /// for them.
        private(set) var extras: Extras?
        /// The timeout once set; `nil` while the unit's style decides.
        private var chosenTimeout: Duration??

        /// Options with every setting at its default (the timeout is the unit's
        /// style's, see ``usesStyleTimeout``).
        public init() {
            self.name = nil
            self.uniquenessPolicy = .ignore
        }

        /// Options whose timeout the unit's style decides: ``AsyncTask/defaultTimeout``
        /// for a callback-style unit (it could forget ``AsyncTask/finish()``), none for an
        /// async body.
        public init(
            name: String? = nil,
            priority: TaskPriority? = nil,
            uniquenessPolicy: UniquenessPolicy = .ignore,
            notBefore: StartTime? = nil,
            lane: (any Hashable & Sendable)? = nil,
            retry: RetryPolicy? = nil,
            onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
            onEnd: (@Sendable (AsyncTask.Outcome) -> Void)? = nil
        ) {
            self.name = name
            self.priorityRawValue = priority?.rawValue ?? 0
            self.uniquenessPolicy = uniquenessPolicy
            self.extras = .make(
                onTimeout: onTimeout, notBefore: notBefore, lane: lane.map { LaneKey($0) }, retry: retry, onEnd: onEnd)
        }

        /// Options with a timeout of their own: counted from the start of execution,
        /// `nil` for none, whatever the unit's style.
        public init(
            name: String? = nil,
            timeout: Duration?,
            priority: TaskPriority? = nil,
            uniquenessPolicy: UniquenessPolicy = .ignore,
            notBefore: StartTime? = nil,
            lane: (any Hashable & Sendable)? = nil,
            retry: RetryPolicy? = nil,
            onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
            onEnd: (@Sendable (AsyncTask.Outcome) -> Void)? = nil
        ) {
            self.init(
                name: name, priority: priority, uniquenessPolicy: uniquenessPolicy, notBefore: notBefore, lane: lane,
                retry: retry, onTimeout: onTimeout, onEnd: onEnd)
            self.chosenTimeout = .some(timeout)
        }

        // The forms most call sites write, without the settings whose default is made
        // at the call through runtime calls (`TaskPriority?` and `StartTime?` wrap
        // standard-library types with no fixed layout; the lane is an existential): Swift
        // picks the overload that leaves the fewest arguments to their defaults, so these
        // serve `.init(timeout:)`, `.init(name:uniquenessPolicy:)` and the like, and mean
        // the same as the initializers above.

        /// ``init(name:priority:uniquenessPolicy:notBefore:lane:retry:onTimeout:onEnd:)``
        /// with only a name and a policy.
        @_documentation(visibility: internal)
        public init(name: String?, uniquenessPolicy: UniquenessPolicy = .ignore) {
            self.name = name
            self.uniquenessPolicy = uniquenessPolicy
        }

        /// ``init(name:timeout:priority:uniquenessPolicy:notBefore:lane:retry:onTimeout:onEnd:)``
        /// with only a name, a timeout and a policy.
        @_documentation(visibility: internal)
        public init(name: String? = nil, timeout: Duration?, uniquenessPolicy: UniquenessPolicy = .ignore) {
            self.name = name
            self.uniquenessPolicy = uniquenessPolicy
            self.chosenTimeout = .some(timeout)
        }

        /// How long the unit may execute, counted from its start; `nil` for no timeout.
        /// Reads `nil` too while unset (``usesStyleTimeout``); setting it, even to `nil`,
        /// overrides the style's default.
        public var timeout: Duration? {
            get { chosenTimeout ?? nil }
            set { chosenTimeout = .some(newValue) }
        }

        /// `true` while no timeout was set: the unit's style then decides (10 seconds
        /// for a callback-style unit, none for an async body).
        public var usesStyleTimeout: Bool { chosenTimeout == nil }
    }
}

extension AsyncTask {
    /// When a unit may start at the earliest: a delay counted from the moment it is
    /// added to its queue, or an instant of the continuous clock.
    ///
    /// Until then the unit is live — it counts as enqueued, deduplicates by its name,
    /// holds its place in its lane and keeps its queue busy (so ``BackgroundQueue/waitUntilIdle()``
    /// waits for it, and the queue's background time is held while it waits) — but it
    /// holds no concurrency slot, no `Task` and no thread: one timer per queue serves
    /// every start time and timeout. Then it starts like any ready unit: by priority,
    /// first come first served, as slots free up. Its timeout counts from that start.
    ///
    /// A delay of zero or less, or an instant that has passed, means no delay: the unit
    /// is ready at once.
    public struct StartTime: Sendable, Hashable {
        private enum Kind: Hashable {
            case delay(Duration)
            case instant(ContinuousClock.Instant)
        }

        private let kind: Kind

        /// `delay` after the unit is added to its queue.
        public static func after(_ delay: Duration) -> Self { Self(kind: .delay(delay)) }

        /// At `instant`, or at once if it has passed when the unit is added.
        public static func at(_ instant: ContinuousClock.Instant) -> Self { Self(kind: .instant(instant)) }

        /// Nanoseconds from now until the start time, for the queue's clock (clamped to
        /// the range of `Int64`).
        var delayFromNow: Int64 {
            switch kind {
            case .delay(let delay): AsyncTask.nanoseconds(delay)
            case .instant(let instant): AsyncTask.nanoseconds(ContinuousClock.now.duration(to: instant))
            }
        }
    }
}
