#!/usr/bin/env bash
# Type-checks 1.x calls that no longer compile (Tests/Fixtures/legacy-1x) against the
# library's default build, and checks that each error names the replacement.
set -euo pipefail
cd "$(dirname "$0")/.."
# The library as a client gets it: the default build, no trait (a trait's dependencies
# bring C modules that a bare `swiftc -I` cannot find).
swift build --target Backgroundable
modules="$(swift build --show-bin-path)/Modules"
output="$(swiftc -typecheck -swift-version 6 -I "$modules" Tests/Fixtures/legacy-1x/Legacy1x.swift 2>&1 || true)"
status=0
for expected in \
    "'addOperation' has been renamed to 'add(_:)'" \
    "the 1.x BackgroundQueue class is BackgroundOperationQueue" \
    "'cancelAllOperations()' has been renamed to 'cancelAll()'" \
    "await waitUntilIdle()" \
    "enqueuedCount + executingCount" \
    "'maxConcurrentOperationCount' has been renamed to 'maxConcurrentTasks'"; do
    if ! grep -qF "$expected" <<<"$output"; then
        echo "missing compiler message: $expected" >&2
        status=1
    fi
done
if [ "$status" -ne 0 ]; then
    echo "$output" >&2
    exit 1
fi
echo "1.x calls get compiler messages naming their replacements"
