import Testing

@testable import Backgroundable

@Suite("Machine: outbox")
struct OutboxTests {
    typealias Box = Outbox<ModelMember>

    private func post(_ outbox: inout Box, _ delivery: Box.Delivery) -> Box.Posting {
        outbox.post(delivery)
    }

    private func take(_ outbox: inout Box, _ batch: inout [Box.Delivery]) -> Bool {
        outbox.take(into: &batch)
    }

    @Test func theFirstPostMakesTheDelivererAndTheNextOnesQueue() {
        var outbox = Box()
        #expect(post(&outbox, .busy(period: 1)) == .becameDeliverer)
        #expect(post(&outbox, .progress) == .queued)
        var batch: [Box.Delivery] = []
        #expect(take(&outbox, &batch))
        #expect(batch.count == 2)
        // Posting while the deliverer still holds the role queues behind it.
        #expect(post(&outbox, .idle(period: 1)) == .queued)
        #expect(take(&outbox, &batch))
        #expect(batch.count == 1)
        // Nothing left: the deliverer stops, and the next post makes a new one.
        #expect(!take(&outbox, &batch))
        #expect(batch.isEmpty && !outbox.isDelivering)
        #expect(post(&outbox, .closed) == .becameDeliverer)
    }

    @Test func aCorrectedEventTellsTheOutcomeOrGoes() {
        let admitted = ModelMember(1)
        let turnedAway = ModelMember(2)
        var outbox = Box()
        _ = outbox.post(.event(.ended(admitted, .timedOut)))
        _ = outbox.post(.event(.ended(turnedAway, .dropped)))
        outbox.correctEvent(of: admitted, admitted: true, outcome: .cancelled)
        outbox.correctEvent(of: turnedAway, admitted: false, outcome: nil)
        var batch: [Box.Delivery] = []
        #expect(take(&outbox, &batch))
        #expect(batch.count == 1)
        guard case .event(.ended(let member, let outcome)) = batch.first else {
            Issue.record("expected the corrected event, got \(batch)")
            return
        }
        #expect(member === admitted && outcome.kind == .cancelled)
    }
}
