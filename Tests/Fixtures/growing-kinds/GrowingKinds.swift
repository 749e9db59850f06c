// A client of the types that gain kinds in minor releases, written as the documentation
// says. `.ci/growing-kinds.sh` type-checks it twice: against the library as it is, and
// against the library built with `-DBACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING`, which has one
// more event kind and one more uniqueness policy. Both must compile without a change.
import Backgroundable

func describe(_ event: BackgroundQueue.Event) -> String {
    switch event.kind {
    case .busy: "busy"
    case .idle: "idle"
    case .enqueued, .started: "\(event.kind) \(event.unit!)"
    case .ended: "\(event.unit!) ended: \(event.outcome!)"
    case .retrying: "retry \(event.attempt!) of \(event.unit!) in \(event.delay!), after \(event.error!)"
    case .joined: "\(event.unit!) joined \(event.primary!)"
    case .escalated: "\(event.unit!) escalated to \(event.priority!)"
    case .backgroundTimeExpiring: "background time expiring"
    default: "\(event)"
    }
}

func deduplicates(_ policy: UniquenessPolicy) -> Bool {
    switch policy {
    case .ignore: false
    case .drop, .replace, .join: true
    default: false
    }
}

func watch(_ queue: BackgroundQueue) async {
    for await event in queue.events {
        print(describe(event))
        if event.kind == .idle { break }
    }
    _ = UniquenessPolicy.allCases.filter(deduplicates)
}
