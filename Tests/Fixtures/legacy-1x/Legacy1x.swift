// 1.x code that no longer compiles: `.ci/legacy-1x.sh` type-checks it and expects each
// call to fail with a message that names its replacement.
import Backgroundable
import Foundation

func legacy(_ queue: BackgroundQueue, _ operation: Operation) {
    queue.addOperation(operation)
    queue.addOperations([operation], waitUntilFinished: false)
    queue.cancelAllOperations()
    queue.waitUntilAllOperationsAreFinished()
    _ = queue.operationCount
    _ = queue.maxConcurrentOperationCount
}
