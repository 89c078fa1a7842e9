#!/usr/bin/env bash
# Prints the root module's tracked Go lines split by what they are, so the
# share of library, daemons, test kit and demo can be compared over time.
#
#   scripts/golines.sh        # one row per part: code, tests, total, share
#
# Only the root module counts: directories with their own go.mod (bench,
# e2e, examples/*, ...) are left out. Generated code (*.pb.go, sqlc, wire)
# counts with the package it belongs to. The parts, first match wins:
#   demo       the reference demo and examples: internal/catalog, api/catalog,
#              cmd/catalog, cmd/projector, examples/
#   test fakes the test servers and doubles and the test kit built on them:
#              relaytest, gpubsub/strict, gpubsubtest, estest, elastictest,
#              opstest, telemetrytest, testdb, testevent, relayfixture
#   daemons    cmd/ (the generic daemons, relayctl's main, their configs)
#   library    everything else: the public packages and their internals
# "code" is non-test files, "tests" is *_test.go.
set -euo pipefail
cd "$(dirname "$0")/.."

nested=$(git ls-files '*go.mod' | grep -v '^go.mod$' | sed 's|/go.mod$||' || true)

git ls-files '*.go' | awk -v nested="$(echo "$nested" | tr '\n' ' ')" '
BEGIN { n = split(nested, skip, " ") }
{
	for (i = 1; i <= n; i++) if (skip[i] != "" && index($0, skip[i] "/") == 1) next
	print
}' | while read -r f; do
	printf '%s %s\n' "$(wc -l <"$f")" "$f"
done | awk '
function part(p) {
	if (p ~ /^(internal\/catalog|api\/catalog|cmd\/catalog|cmd\/projector|examples)\//) return "demo"
	if (p ~ /(^|\/)(relaytest|strict|gpubsubtest|estest|elastictest|opstest|telemetrytest|testdb|testevent|relayfixture)\//) return "test fakes"
	if (p ~ /^cmd\//) return "daemons"
	return "library"
}
{
	p = part($2); kind = ($2 ~ /_test\.go$/) ? "tests" : "code"
	lines[p, kind] += $1; total += $1
}
END {
	printf "%-11s %8s %8s %8s %6s\n", "part", "code", "tests", "total", "share"
	parts[1] = "library"; parts[2] = "daemons"; parts[3] = "test fakes"; parts[4] = "demo"
	for (i = 1; i <= 4; i++) {
		p = parts[i]; t = lines[p, "code"] + lines[p, "tests"]
		printf "%-11s %8d %8d %8d %5.1f%%\n", p, lines[p, "code"], lines[p, "tests"], t, total ? 100 * t / total : 0
	}
	printf "%-11s %8s %8s %8d\n", "all", "", "", total
}'
