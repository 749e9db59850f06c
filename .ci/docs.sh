#!/usr/bin/env bash
# Converts the DocC catalog with warnings treated as errors, so a broken symbol
# link (in an article or a doc comment) fails CI.
#
# Symbol graphs come from `swift package dump-symbol-graph` with the `Macros`
# trait, so the macros are documented too; only the library's own graphs
# (Backgroundable.symbols.json and its Backgroundable@<Module> extension graphs)
# are handed to docc.
#
# Environment: SCRATCH_PATH (default .build), DOCS_OUTPUT (default
# $SCRATCH_PATH/docs/Backgroundable.doccarchive).
set -euo pipefail
cd "$(dirname "$0")/.."

scratch="${SCRATCH_PATH:-.build}"
output="${DOCS_OUTPUT:-$scratch/docs/Backgroundable.doccarchive}"
graphs="$scratch/docs/symbol-graphs"

swift package --scratch-path "$scratch" --traits Macros \
    dump-symbol-graph --minimum-access-level public --skip-synthesized-members
rm -rf "$graphs" "$output"
mkdir -p "$graphs"
triple_dir="$(dirname "$(swift build --scratch-path "$scratch" --traits Macros --show-bin-path)")"
cp "$triple_dir"/symbolgraph/Backgroundable.symbols.json "$graphs"/
cp "$triple_dir"/symbolgraph/Backgroundable@*.symbols.json "$graphs"/ 2>/dev/null || true

docc convert Sources/Backgroundable/Backgroundable.docc \
    --additional-symbol-graph-dir "$graphs" \
    --fallback-display-name Backgroundable \
    --fallback-bundle-identifier com.backgroundable.Backgroundable \
    --fallback-default-module-kind library \
    --warnings-as-errors \
    --output-path "$output"
echo "Documentation written to $output"
