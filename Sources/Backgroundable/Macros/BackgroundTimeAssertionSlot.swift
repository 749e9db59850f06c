#if Macros
    import Synchronization

    /// Holds the background-time assertions of an object's `@Backgroundable` methods
    /// while their bodies run, so other code can see or end them. Declared by
    /// ``BackgroundableProperty(name:)``.
    ///
    /// Thread-safe: every member may be called from any thread or actor.
    /// ``BackgroundTimeAssertion/end()`` is never called under the slot's lock.
    public final class BackgroundTimeAssertionSlot: Sendable {
        /// Held assertions, oldest first. Calls of the same method can overlap.
        private let held = Lock<[BackgroundTimeAssertion]>([])

        /// Creates an empty slot.
        public init() {}

        /// The most recently begun assertion still held here, if any.
        public var current: BackgroundTimeAssertion? {
            held.withLock { $0.last }
        }

        /// Every assertion held here, oldest first.
        public var assertions: [BackgroundTimeAssertion] {
            held.withLock { $0 }
        }

        /// `true` while some assertion held here has neither ended nor expired.
        public var isHeld: Bool {
            assertions.contains { $0.isHeld }
        }

        /// Ends every assertion held here (the methods' own `defer` then finds them
        /// ended: ``BackgroundTimeAssertion/end()`` is idempotent).
        public func end() {
            for assertion in held.withLock({ $0 }) {
                assertion.end()
            }
        }

        /// Adds `assertion`; called by the macro's expansion before the body.
        public func hold(_ assertion: BackgroundTimeAssertion) {
            held.withLock { $0.append(assertion) }
        }

        /// Removes `assertion`; called by the macro's expansion when the body exits.
        public func release(_ assertion: BackgroundTimeAssertion) {
            held.withLock { held in
                if let index = held.lastIndex(where: { $0 === assertion }) {
                    held.remove(at: index)
                }
            }
        }
    }
#endif
