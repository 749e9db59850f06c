// The spellings of 2.0's first releases; see BackgroundQueue+Deprecated.swift.
extension AsyncTask {
    @available(
        *, deprecated,
        message:
            "Use AsyncTask(_:_:) with AsyncTask.Options: AsyncTask(.init(name:timeout:priority:uniquenessPolicy:onTimeout:)) { task in … }"
    )
    @_disfavoredOverload
    public convenience init(
        name: String? = nil,
        timeout: Duration? = AsyncTask.defaultTimeout,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
        _ work: sending @escaping @isolated(any) (AsyncTask) -> Void
    ) {
        self.init(
            Options(
                name: name, timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy,
                onTimeout: onTimeout), work)
    }

    @available(
        *, deprecated,
        message:
            "Use AsyncTaskHandle(_:_:) with AsyncTask.Options: AsyncTaskHandle(.init(name:timeout:priority:uniquenessPolicy:onTimeout:)) { … }"
    )
    @_disfavoredOverload
    public static func operation<Success: Sendable>(
        name: String? = nil,
        timeout: Duration? = nil,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
        _ body: sending @escaping @isolated(any) () async throws -> Success
    ) -> AsyncTaskHandle<Success> {
        AsyncTaskHandle(
            Options(
                name: name, timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy,
                onTimeout: onTimeout), body)
    }

    @available(*, deprecated, message: "Use AsyncTaskHandle(_:_:)")
    public static func operation<Success: Sendable>(
        _ options: Options, _ body: sending @escaping @isolated(any) () async throws -> Success
    ) -> AsyncTaskHandle<Success> {
        AsyncTaskHandle(options, body)
    }
}
