#!/usr/bin/env bash
# A client switching over the kinds of `BackgroundQueue.Event` and over `UniquenessPolicy`
# (Tests/Fixtures/growing-kinds) compiles unchanged when the library gains a kind: it is
# type-checked against the library as it is, then against the library built with
# `-DBACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING` (one more event kind, one more policy).
set -euo pipefail
cd "$(dirname "$0")/.."
fixture=Tests/Fixtures/growing-kinds/GrowingKinds.swift
scratch=.build-extra-kinds
status=0
check() {
    local label="$1" modules="$2" output
    if output="$(swiftc -typecheck -swift-version 6 -warnings-as-errors -I "$modules" "$fixture" 2>&1)"; then
        echo "the client compiles against $label"
    else
        echo "$output" >&2
        echo "the client does not compile against $label" >&2
        status=1
    fi
}
swift build --target Backgroundable
check "the library" "$(swift build --show-bin-path)/Modules"
swift build --scratch-path "$scratch" --target Backgroundable -Xswiftc -DBACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING
check "the library with one more kind" "$(swift build --scratch-path "$scratch" --show-bin-path)/Modules"
exit "$status"
