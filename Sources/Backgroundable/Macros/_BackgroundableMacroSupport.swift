#if Macros
    /// Runtime support for the code ``Backgroundable(withName:expirationFunc:propertyName:)``
    /// expands to. Not meant to be called directly.
    ///
    /// The expiration method reaches `self` weakly for a class, weakly then in a task
    /// on the actor for an actor, by copy for a value type, on the main actor for
    /// main-actor code. The macro picks the actor and main-actor forms from what it
    /// sees of the declaration; the type checker picks between class and value type.
    ///
    /// The class and value-type forms take a closure that inherits the isolation of the
    /// method the macro expands in, which the macro cannot see when it comes from a
    /// module's default isolation (`.defaultIsolation(MainActor.self)`): the closure then
    /// is main-actor isolated, and is called in a task on the main actor.
    public enum _BackgroundableMacroSupport {
        /// A class: `call` runs in a task on the method's isolation (off every actor for a
        /// nonisolated method), if `target` still exists.
        public static func expirationHandler<Target: AnyObject & Sendable>(
            for target: Target,
            @_inheritActorContext _ call: @escaping @isolated(any) @Sendable (Target) -> Void
        ) -> @Sendable () -> Void {
            { [weak target] in
                guard let target else { return }
                Task { await call(target) }
            }
        }

        /// An actor: `call` runs in a new task on `target`, if it still exists.
        public static func actorExpirationHandler<Target: Actor>(
            for target: Target,
            _ call: @escaping @Sendable (isolated Target) -> Void
        ) -> @Sendable () -> Void {
            { [weak target] in
                guard let target else { return }
                Task { await call(target) }
            }
        }

        /// A value type (or a metatype, for static methods): `call` runs in a task on the
        /// method's isolation with a copy of `target`.
        public static func expirationHandler<Target: Sendable>(
            for target: Target,
            @_inheritActorContext _ call: @escaping @isolated(any) @Sendable (Target) -> Void
        ) -> @Sendable () -> Void {
            { Task { await call(target) } }
        }

        /// A main-actor class: `call` runs on the main actor, if `target` still exists.
        public static func mainActorExpirationHandler<Target: AnyObject & Sendable>(
            for target: Target,
            _ call: @escaping @MainActor @Sendable (Target) -> Void
        ) -> @Sendable () -> Void {
            { [weak target] in
                guard let target else { return }
                MainThread.runOrEnqueue { call(target) }
            }
        }

        /// A main-actor value type: `call` runs on the main actor with a copy of `target`.
        public static func mainActorExpirationHandler<Target: Sendable>(
            for target: Target,
            _ call: @escaping @MainActor @Sendable (Target) -> Void
        ) -> @Sendable () -> Void {
            { MainThread.runOrEnqueue { call(target) } }
        }

        /// A main-actor free function.
        public static func mainActorExpirationHandler(
            _ call: @escaping @MainActor @Sendable () -> Void
        ) -> @Sendable () -> Void {
            { MainThread.runOrEnqueue(call) }
        }
    }
#endif
