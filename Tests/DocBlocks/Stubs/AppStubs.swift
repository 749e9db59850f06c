// The app's own types and functions that the documentation's examples call: declared
// here once, so that every block type-checks as written. Everything an example could
// call from a background body is `nonisolated` and `Sendable`, as an app's networking or
// storage layer would be.
import Backgroundable
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Tracing

// MARK: Values the examples use

nonisolated struct Photo: Sendable {
    nonisolated init(data: Data) {}
}
nonisolated struct Image: Sendable {}
nonisolated struct File: Sendable {}
nonisolated struct Receipt: Sendable {}
nonisolated struct SearchResult: Sendable {}
nonisolated struct Message: Sendable, Decodable {
    var isRead = false
}

nonisolated let photo = Photo(data: Data())
nonisolated let id = 7
nonisolated let url = URL(fileURLWithPath: "/tmp/photo.heic")
nonisolated let file = File()

// MARK: The queues the examples share

nonisolated let uploads = BackgroundQueue(name: "uploads", maxConcurrentTasks: 2)
nonisolated let imageQueue = BackgroundQueue(name: "Images", maxConcurrentTasks: 4)
nonisolated let queue = BackgroundQueue(name: "Sync", maxConcurrentTasks: 2)

// MARK: The app's services

nonisolated final class API: Sendable {
    func upload(_ photo: Photo) async throws -> Receipt { Receipt() }
    func sync() async throws {}
    func refresh() async throws -> Int { 0 }
    func search(_ text: String) async throws -> [SearchResult] { [] }
    func download(_ path: String) async throws -> Data { Data("[]".utf8) }
    func upload(file path: String, idempotencyKey: String) async throws {}
}
nonisolated let api = API()

nonisolated final class LegacyClient: Sendable {
    func sync(completion: @escaping @Sendable (Error?) -> Void) { completion(nil) }
    func download(_ url: URL, completion: @escaping @Sendable (Data?) -> Void) { completion(nil) }
}
nonisolated let legacyClient = LegacyClient()

nonisolated final class Store: Sendable {
    func save() async throws -> Bool { true }
    func cancelSave() {}
}
nonisolated let store = Store()

nonisolated enum PhotoLibrary {
    static func cached() -> [Photo] { [] }
}

nonisolated enum Checkpoints {
    static func save(for object: AnyObject) {}
}

nonisolated func renderThumbnail(for photo: Photo) async throws -> Image { Image() }
nonisolated func renderThumbnail(_ id: Int) async throws -> Image { Image() }
nonisolated func send(_ file: File) async throws {}
nonisolated func upload(_ file: File) async throws {}
nonisolated func log(_ message: String) {}
nonisolated func show(_ image: Image) {}

// MARK: A command-line tool's own steps

nonisolated func writeManifest() throws {}

// MARK: A server's own parts

nonisolated let logger = Logger(label: "server")
nonisolated struct HTTPServer: Service {
    func run() async throws {}
}
nonisolated let httpServer = HTTPServer()
nonisolated let prometheusFactory: any MetricsFactory = NOOPMetricsHandler.instance
nonisolated let otelTracer = NoOpTracer()

// MARK: Jobs claimed from another system (RunningInAServer.md)

nonisolated struct Job: Sendable {
    let id: String
    func perform() async throws {}
}
nonisolated final class JobSource: Sendable {
    func claim() async throws -> Job { Job(id: "job-1") }
    func acknowledge(_ job: Job) {}
    func release(_ job: Job) {}
}
nonisolated let jobSource = JobSource()

// MARK: Accounts and documents

nonisolated struct Account: Sendable {
    var id = UUID()
}
nonisolated struct Change: Sendable {
    var id = 1
}
nonisolated let document = Document()
nonisolated final class Document: Sendable {
    let id = 1
    func save() {}
}

nonisolated extension API {
    func apply(_ change: Change, to account: Account) async throws {}
}

// MARK: Authentication

nonisolated struct Token: Sendable {}

nonisolated extension API {
    func refreshToken() async throws -> Token { Token() }
}

// MARK: Progress (Progress.md)

nonisolated func store(_ file: File) async throws {}
@MainActor final class StatusLabel {
    var text = ""
}

#if !canImport(SwiftUI)
    // Stand-ins for the few SwiftUI names the progress article uses, so that its view
    // type-checks where SwiftUI does not exist (Linux, where CI runs).
    @MainActor protocol View {
        associatedtype Body: View
        @ViewBuilder var body: Body { get }
    }
    extension Never: View {
        var body: Never { fatalError("a stand-in view has no body") }
    }
    @resultBuilder enum ViewBuilder {
        static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    }
    @MainActor @propertyWrapper struct State<Value> {
        var wrappedValue: Value
    }
    struct Text: View {
        init(_ text: String) {}
        var body: Never { fatalError("a stand-in view has no body") }
    }
    struct ProgressView<Label: View>: View {
        init(value: Double, @ViewBuilder label: () -> Label) {}
        var body: Never { fatalError("a stand-in view has no body") }
    }
#endif

#if !(canImport(BackgroundTasks) && os(iOS))
    // A stand-in with the signature of the iOS 26 provider (Sources/…/
    // ContinuedProcessingBackgroundTaskProvider.swift), which only iOS compiles: the
    // article's example type-checks against the same declaration here.
    @available(iOS 26.0, *)
    nonisolated final class ContinuedProcessingBackgroundTaskProvider: BackgroundTaskProvider {
        enum SubmissionStrategy { case fail, queue }
        init(
            identifier: String, title: String, subtitle: String, strategy: SubmissionStrategy = .queue,
            progressSubtitle: (@Sendable (QueueProgress) -> String)? = nil
        ) {}
        func beginBackgroundTask(
            named name: String, expirationHandler: @escaping @Sendable () -> Void
        ) -> BackgroundTaskIdentifier? { nil }
        func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {}
    }
#endif

#if !(canImport(BackgroundTasks) && os(iOS))
    // A stand-in with the signature of the iOS scheduler (Sources/…/Durable/
    // BackgroundProcessingScheduler.swift), which only iOS compiles.
    nonisolated final class BackgroundProcessingScheduler: Sendable {
        init(
            identifier: String, jobs: DurableQueue, request: BackgroundLaunchRequest = .processing(),
            onError: (@Sendable (any Error) -> Void)? = nil
        ) {}
        func schedule() async {}
    }

    nonisolated struct BackgroundLaunchRequest: Sendable {
        static func processing(
            requiresNetworkConnectivity: Bool = true, requiresExternalPower: Bool = false
        ) -> BackgroundLaunchRequest { BackgroundLaunchRequest() }
        static var appRefresh: BackgroundLaunchRequest { BackgroundLaunchRequest() }
    }
#endif
