/// A binary min-heap of executing units keyed by ``QueueLinks/deadline``. Each unit
/// stores its index, so removal when it ends is O(log n) with no search.
/// Guarded by the queue's lock.
struct DeadlineHeap {
    private var units: [AsyncTask] = []

    var isEmpty: Bool { units.isEmpty }
    var earliest: AsyncTask? { units.first }

    mutating func insert(_ unit: AsyncTask) {
        units.append(unit)
        setIndex(units.count - 1)
        siftUp(units.count - 1)
    }

    mutating func remove(_ unit: AsyncTask) {
        let index = Int(unit.links.heapIndex)
        guard index >= 0 else { return }
        unit.links.heapIndex = -1
        let lastIndex = units.count - 1
        if index != lastIndex {
            units.swapAt(index, lastIndex)
            setIndex(index)
        }
        units.removeLast()
        if index < units.count {
            siftDown(index)
            siftUp(index)
        }
    }

    private mutating func setIndex(_ index: Int) {
        units[index].links.heapIndex = Int32(index)
    }

    private func isEarlier(_ lhs: Int, _ rhs: Int) -> Bool {
        units[lhs].links.deadline < units[rhs].links.deadline
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard isEarlier(child, parent) else { return }
            units.swapAt(child, parent)
            setIndex(child)
            setIndex(parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            var smallest = parent
            for child in [2 * parent + 1, 2 * parent + 2] where child < units.count && isEarlier(child, smallest) {
                smallest = child
            }
            guard smallest != parent else { return }
            units.swapAt(parent, smallest)
            setIndex(parent)
            setIndex(smallest)
            parent = smallest
        }
    }
}
