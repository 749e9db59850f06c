// The spellings of 2.0's first releases, before `AsyncTask.Options` became the one
// carrier of a unit's settings. They compile, with a warning naming the new spelling
// (.ci/deprecated-spellings.sh checks both), and forward to it. Those with every
// parameter defaulted are disfavoured overloads: a call either could take
// (`queue.add(work)`) takes the new one.
extension BackgroundQueue {
    @available(
        *, deprecated,
        message:
            "Use add(_:_:) with AsyncTask.Options: add(.init(name:timeout:priority:uniquenessPolicy:onTimeout:)) { task in … }"
    )
    @_disfavoredOverload
    @discardableResult
    public nonisolated func add(
        name: String? = nil,
        timeout: Duration? = AsyncTask.defaultTimeout,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
        _ work: sending @escaping @isolated(any) (AsyncTask) -> Void
    ) -> AsyncTask {
        add(
            AsyncTask.Options(
                name: name, timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy,
                onTimeout: onTimeout), work)
    }

    @available(
        *, deprecated,
        message:
            "Use add(_:_:) with AsyncTask.Options: add(.init(name:timeout:priority:uniquenessPolicy:onTimeout:)) { … }"
    )
    @_disfavoredOverload
    @discardableResult
    public nonisolated func addTask<Success: Sendable>(
        name: String? = nil,
        timeout: Duration? = nil,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
        _ body: sending @escaping @isolated(any) () async throws -> Success
    ) -> AsyncTaskHandle<Success> {
        add(
            AsyncTask.Options(
                name: name, timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy,
                onTimeout: onTimeout), body)
    }

    @available(*, deprecated, renamed: "add(_:_:)")
    @discardableResult
    public nonisolated func addTask<Success: Sendable>(
        _ options: AsyncTask.Options, _ body: sending @escaping @isolated(any) () async throws -> Success
    ) -> AsyncTaskHandle<Success> {
        add(options, body)
    }

    @available(
        *, deprecated,
        message:
            "Use add(_:_:) with AsyncTask.Options: add(.init(name:timeout:priority:uniquenessPolicy:onTimeout:)) { … }"
    )
    @_disfavoredOverload
    @discardableResult
    public nonisolated func addOperation<Success: Sendable>(
        name: String? = nil,
        timeout: Duration? = nil,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
        _ body: sending @escaping @isolated(any) () async throws -> Success
    ) -> AsyncTaskHandle<Success> {
        add(
            AsyncTask.Options(
                name: name, timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy,
                onTimeout: onTimeout), body)
    }

    @available(
        *, deprecated,
        message:
            "Use run(_:_:) with AsyncTask.Options: run(.init(name:timeout:priority:uniquenessPolicy:onTimeout:)) { … }"
    )
    @_disfavoredOverload
    public nonisolated func run<Success: Sendable>(
        name: String? = nil,
        timeout: Duration? = nil,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil,
        _ body: sending @escaping @isolated(any) () async throws -> Success
    ) async throws -> Success {
        try await run(
            AsyncTask.Options(
                name: name, timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy,
                onTimeout: onTimeout), body)
    }
}
