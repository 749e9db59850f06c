extension AsyncTask {
    /// The settings of a unit, as one value to keep and reuse: its name, timeout,
    /// priority, uniqueness policy and `onTimeout` callback.
    ///
    /// Every entry point that creates a unit takes one —
    /// ``BackgroundQueue/add(_:_:)``, ``BackgroundQueue/addTask(_:_:)``,
    /// ``BackgroundQueue/run(_:_:)``, ``AsyncTask/init(_:_:)``,
    /// ``AsyncTask/operation(_:_:)``, ``AsyncTask/init(operation:options:)`` — and
    /// also takes each setting as a parameter of the same name, for one-off calls:
    /// `queue.add(name: "sync") { … }` is `queue.add(.init(name: "sync")) { … }`.
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
        public var priority: TaskPriority?
        /// What a queue does when a live unit already has the same name.
        public var uniquenessPolicy: UniquenessPolicy
        /// Runs exactly once, after the outcome became ``Outcome/timedOut``, in a task of
        /// its own: off every actor, or on the one it is isolated to
        /// (`{ @MainActor task in … }`).
        public var onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)?
        /// The timeout once set; `nil` while the unit's style decides.
        private var chosenTimeout: Duration??

        /// Options whose timeout the unit's style decides: ``AsyncTask/defaultTimeout``
        /// for a callback-style unit (it could forget ``AsyncTask/finish()``), none for an
        /// async body.
        public init(
            name: String? = nil,
            priority: TaskPriority? = nil,
            uniquenessPolicy: UniquenessPolicy = .ignore,
            onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil
        ) {
            self.name = name
            self.priority = priority
            self.uniquenessPolicy = uniquenessPolicy
            self.onTimeout = onTimeout
        }

        /// Options with a timeout of their own: counted from the start of execution,
        /// `nil` for none, whatever the unit's style.
        public init(
            name: String? = nil,
            timeout: Duration?,
            priority: TaskPriority? = nil,
            uniquenessPolicy: UniquenessPolicy = .ignore,
            onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil
        ) {
            self.init(name: name, priority: priority, uniquenessPolicy: uniquenessPolicy, onTimeout: onTimeout)
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

        /// The timeout a unit of a style whose default is `styleDefault` gets.
        func timeout(defaultingTo styleDefault: Duration?) -> Duration? {
            chosenTimeout ?? styleDefault
        }
    }
}
