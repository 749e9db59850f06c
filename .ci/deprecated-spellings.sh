#!/usr/bin/env bash
# Type-checks the deprecated spellings of the unit-making API (Tests/Fixtures/deprecated-spellings)
# against the library's default build (or the modules in $BACKGROUNDABLE_MODULES): they must
# compile, and each warning must name the spelling that replaces it.
set -euo pipefail
cd "$(dirname "$0")/.."
# The library as a client gets it: the default build, no trait (a trait's dependencies
# bring C modules that a bare `swiftc -I` cannot find).
if [ -z "${BACKGROUNDABLE_MODULES:-}" ]; then
    swift build --target Backgroundable
fi
modules="${BACKGROUNDABLE_MODULES:-$(swift build --show-bin-path)/Modules}"
fixture=Tests/Fixtures/deprecated-spellings/DeprecatedSpellings.swift
if ! output="$(swiftc -typecheck -swift-version 6 -I "$modules" "$fixture" 2>&1)"; then
    echo "$output" >&2
    echo "a deprecated spelling no longer compiles" >&2
    exit 1
fi
status=0
# One line per deprecated spelling: the declaration the warning names, then the new spelling.
while IFS='|' read -r old new; do
    if ! grep -F "'$old' is deprecated" <<<"$output" | grep -qF "$new"; then
        echo "missing warning: '$old' is deprecated, naming $new" >&2
        status=1
    fi
done <<'SPELLINGS'
add(name:timeout:priority:uniquenessPolicy:onTimeout:_:)|Use add(_:_:) with AsyncTask.Options
addTask(name:timeout:priority:uniquenessPolicy:onTimeout:_:)|Use add(_:_:) with AsyncTask.Options
addTask|renamed to 'add(_:_:)'
addOperation(name:timeout:priority:uniquenessPolicy:onTimeout:_:)|Use add(_:_:) with AsyncTask.Options
run(name:timeout:priority:uniquenessPolicy:onTimeout:_:)|Use run(_:_:) with AsyncTask.Options
add(_:timeout:priority:uniquenessPolicy:onTimeout:)|Use add(_:options:) with AsyncTask.Options
init(name:timeout:priority:uniquenessPolicy:onTimeout:_:)|Use AsyncTask(_:_:) with AsyncTask.Options
operation(name:timeout:priority:uniquenessPolicy:onTimeout:_:)|Use AsyncTaskHandle(_:_:) with AsyncTask.Options
operation|Use AsyncTaskHandle(_:_:)
init(operation:name:timeout:priority:uniquenessPolicy:onTimeout:)|Use init(operation:options:) with AsyncTask.Options
SPELLINGS
expected=10
found="$(grep -cE "^[^ ]+\.swift:[0-9]+:[0-9]+: warning: .* is deprecated" <<<"$output" || true)"
if [ "$found" -ne "$expected" ]; then
    echo "expected $expected deprecation warnings, got $found" >&2
    status=1
fi
if [ "$status" -ne 0 ]; then
    echo "$output" >&2
    exit 1
fi
echo "every deprecated spelling compiles, and its warning names the new spelling"
