#!/usr/bin/env bash
# Compares the library's fast path with its plain version, in one sitting:
#
#   default       the fast paths (as shipped)
#   plain-inbox   -DBACKGROUNDABLE_PLAIN_INBOX: every add takes the queue's lock
#   plain-layout  -DBACKGROUNDABLE_PLAIN_LAYOUT: a unit keeps its timeout as the
#                 Duration? it was given (24 bytes) instead of Int64 nanoseconds (8)
#
# (An unretained owner reference was compared the same way and showed no difference
# beyond the noise: the plain, retained one replaced it. So did two other packed
# layouts, a 32-bit ticket in ready entries and names as numbers into a group table:
# each saved under 10 % of a pending unit's memory and nothing measurable in time.
# Benchmarks/README.md has the table.)
#
# Each variant is a release build of backgroundable-bench in a scratch path of its
# own; the variants then run in turns (ROUNDS rounds, each variant once per round, each
# run in a process of its own), so that a slower stretch of the machine falls on all of
# them. Prints, per scenario, the median of each variant's runs and its ratio to the
# default build's.
#
#   Benchmarks/compare-fast-paths.sh [ROUNDS] [FILTER]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
filter="${2:-memory.BackgroundQueue,enqueue.BackgroundQueue,e2e.BackgroundQueue.unbounded,e2e.BackgroundQueue.limit1,dedup.BackgroundQueue,e2e.Task.detached,enqueue.DispatchQueue,enqueue.Task}"
declare -A flags=([default]="" [plain-inbox]="-DBACKGROUNDABLE_PLAIN_INBOX" [plain-layout]="-DBACKGROUNDABLE_PLAIN_LAYOUT")
# VARIANTS="default plain-inbox" picks the variants; default comes first.
read -r -a variants <<<"${VARIANTS:-default plain-inbox plain-layout}"
results="$(mktemp -d)"
for variant in "${variants[@]}"; do
    echo "building $variant" >&2
    # shellcheck disable=SC2086
    swift build -c release --product backgroundable-bench --scratch-path ".build-fastpath-$variant" \
        $(for flag in ${flags[$variant]}; do printf -- '-Xswiftc %s ' "$flag"; done) >&2
done
for round in $(seq "$rounds"); do
    for variant in "${variants[@]}"; do
        echo "round $round/$rounds: $variant" >&2
        ".build-fastpath-$variant/release/backgroundable-bench" --quick --filter "$filter" --json \
            >"$results/$variant.$round.json"
    done
done
python3 - "$results" "$rounds" "${variants[@]}" <<'EOF'
import json, statistics, sys
folder, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
medians = {}
for variant in variants:
    for round in range(1, rounds + 1):
        with open(f"{folder}/{variant}.{round}.json") as file:
            for scenario, result in json.load(file)["scenarios"].items():
                medians.setdefault(scenario, {}).setdefault(variant, []).append(result["median"])
print(f"fast paths against their plain versions, {rounds} runs each (median ns/unit or bytes/unit; ratio to default)")
print(f"{'scenario':48}" + "".join(f"{v:>24}" for v in variants))
for scenario, byVariant in medians.items():
    base = statistics.median(byVariant["default"])
    cells = []
    for variant in variants:
        value = statistics.median(byVariant[variant])
        cells.append(f"{value:12.1f} ({value / base if base else 0:5.2f}x)")
    print(f"{scenario:48}" + "".join(f"{c:>24}" for c in cells))
EOF
rm -rf "$results"
