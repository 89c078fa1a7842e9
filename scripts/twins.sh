#!/usr/bin/env bash
# Lists the hand-written twins of the root module: pairs of places sharing
# 11 or more lines (the same, or the same shape with other names), found by
# the `duplicates` scanner over a copy of the root module's hand-written
# files (no nested module, no generated file, no frozen copy). Exits 1
# while any pair is left, 2 when the scan did not finish.
# Usage: scripts/twins.sh [--min-lines N]   (default 11: no twin of more than 10 lines)
set -euo pipefail
cd "$(dirname "$0")/.."
min=11
[ "${1:-}" = --min-lines ] && min=$2

# Frozen history, left out of the scan, one reason each.
frozen=(
	'^migrations/.*\.sql$'   # applied migrations never change: a later one restates an earlier function body whole
	'^relay/internal/claim/testdata/previous_release_claim\.sql$' # the previous release's claim statement, kept as it shipped for the compatibility test
)
# Pairs alike in shape only (other names, other values), reviewed: not one
# logic written twice. A pair here is still listed when it shares a run
# letter for letter.
alike=(
	'internal/errclass/reason.go internal/gpubsub/strict/rules.go'   # two enumerations of string constants: failure reasons, the double's refusal rules
	'internal/errclass/reason.go projection/errors.go'               # the same: failure reasons and the reasons handlers return
	'internal/gpubsub/strict/rules.go projection/errors.go'          # the same: refusal rules and handler reasons
	'projector/batchapplier.go projector/txapplier.go'               # two engines' constructors: an argument check, then different bodies
	'relay/indexes_test.go relay/reclaim_test.go'                    # two tests' imports and first lines (a database, a topic), then different tests
	'relayctl/internal/command/resolve_test.go relayctl/internal/command/statuslog_test.go' # the same: imports and a test's first lines
)

if ! command -v duplicates >/dev/null; then
	echo "twins: the duplicates scanner is not installed here; not checked"
	exit 0
fi

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
nested=$(git ls-files '*/go.mod' | sed 's|/go.mod$||' | paste -sd'|')
files=$(git ls-files --cached --others --exclude-standard | grep -v -E "^($nested)/" | while read -r f; do
	[ -f "$f" ] || continue
	for re in "${frozen[@]}"; do [[ $f =~ $re ]] && continue 2; done
	echo "$f"
done)
generated=$(xargs -d '\n' awk 'FNR <= 5 && /^\/\/ Code generated .* DO NOT EDIT\.$/ { print FILENAME; nextfile }' <<<"$files")
grep -v -x -F -f <(echo "$generated") <<<"$files" | tar -cf - -T - | tar -xf - -C "$tree"

out=$(duplicates --repo "$tree" --min-lines "$min" --most 200 --seconds 300)
if grep -q '^incomplete:' <<<"$out"; then
	grep '^incomplete:' <<<"$out"
	exit 2
fi
left=0
while read -r id a _ b rest; do
	[[ $id =~ ^D[0-9]+$ ]] || continue
	[[ $rest == *boilerplate* ]] && continue # the scanner's word: what it shares is thin
	if [[ $rest == shape* ]]; then
		pair="${a%:*} ${b%:*}"
		for p in "${alike[@]}"; do [ "$p" = "$pair" ] && continue 2; done
	fi
	echo "$id $a ~ $b $rest"
	left=$((left + 1))
done <<<"$out"
grep -E '^\(\+[0-9]+ more pairs\)|^left out:' <<<"$out" || true
if grep -q '^(+[0-9]* more pairs)' <<<"$out"; then left=$((left + 1)); fi
if [ "$left" -gt 0 ]; then
	echo "twins: $left hand-written pairs of the root module share $min or more lines: fold each into one piece of code"
	exit 1
fi
echo "twins: no hand-written pair of the root module shares $min or more lines ($(head -n 1 <<<"$out"))"
