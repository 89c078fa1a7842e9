#!/usr/bin/env bash
# Holds the import layers of the root module and of the modules beside it:
#
#   (i)   no module other than the root imports a package under the root's
#         internal/ (Go's internal rule goes by import path, so a nested
#         module could; the bench, the fault suite and the checks use the
#         public packages instead);
#   (ii)  a low-level internal package (internal/...) imports no public
#         package, and an X/internal/... package imports no public package
#         that is X or depends on X: no import runs from a lower layer back
#         up. The contract packages (contract, api/eventrelay/...) sit below
#         everything and may be imported from anywhere.
#   (iii) a test fixture (an internal package named *fixture) sits above the
#         layers, as the tests it serves do: it may import public packages,
#         and only tests and the public test kits (*test) may import it.
#
# Imports count with every build tag a module's files use, and with the
# in-package tests (an external _test package is a consumer, not a layer).
# The demo (internal/catalog, api/catalog, cmd/, examples/) is not a layer
# of the library and is checked by depcheck.sh.
#
#   scripts/layercheck.sh [dir]   # exit 1 and one line per offending import
#
# dir is the root module (default: this repository). There is no
# allow-list: every import against the layers fails make verify.
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$root"
mod=$(go list -m)

# tagsof DIR: the build tags its module's files use, one per line ("" first).
tagsof() {
	echo ""
	grep -rhoE --include='*.go' '^//go:build .*' "$1" 2>/dev/null |
		sed 's|^//go:build||' | grep -oE '[A-Za-z_][A-Za-z0-9_.]*' | sort -u || true
}

# imports DIR: "package|import|import..." for every package of the module
# in DIR, under every tag set, in-package test imports included.
imports() {
	local tags
	tagsof "$1" | while read -r tags; do
		(cd "$1" && go list -e -tags "$tags" -f '{{.ImportPath}}{{range .Imports}}|{{.}}{{end}}{{range .TestImports}}|{{.}}{{end}}' ./... 2> >(grep -v 'matched no packages' >&2))
	done
}

# plain DIR: "package|import|..." without the tests' imports.
plain() {
	local tags
	tagsof "$1" | while read -r tags; do
		(cd "$1" && go list -e -tags "$tags" -f '{{.ImportPath}}{{range .Imports}}|{{.}}{{end}}' ./... 2> >(grep -v 'matched no packages' >&2))
	done
}

# xtests DIR: the same with the external test packages' imports.
xtests() {
	local tags
	tagsof "$1" | while read -r tags; do
		(cd "$1" && go list -e -tags "$tags" -f '{{.ImportPath}}{{range .XTestImports}}|{{.}}{{end}}' ./... 2> >(grep -v 'matched no packages' >&2))
	done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The root module's packages, and each one's dependencies: "package|dep|dep..."
tagsof . | while read -r tags; do
	go list -e -tags "$tags" -f '{{.ImportPath}}{{range .Deps}}|{{.}}{{end}}' ./...
done >"$tmp/rootdeps"

nested=$(find . -name go.mod -not -path './go.mod' -not -path '*/testdata/*' -not -path './.run/*' -printf '%h\n' | sort)

{
	echo "@root"
	imports .
	echo "@plain"
	plain .
	for m in $nested; do
		echo "@nested $m"
		imports "$m"
		xtests "$m"
	done
} | awk -F'|' -v mod="$mod" -v rootdeps="$tmp/rootdeps" '
function rel(p) { return p == mod ? "." : substr(p, length(mod) + 2) }
function internal(r) { return r ~ /(^|\/)internal(\/|$)/ }
function demo(r) { return r ~ /^(internal\/catalog|api\/catalog|cmd|examples|docs)(\/|$)/ || r == "cmd" }
function fixture(r) { return internal(r) && r ~ /fixture$/ }
function contract(r) { return r ~ /^(contract|api\/eventrelay)(\/|$)/ }
function public(r) { return !internal(r) && !demo(r) }
function report(line, rule) {
	if (line in printed) return
	printed[line] = 1
	print line "    (" rule ")"
	bad++
}
BEGIN {
	while ((getline l < rootdeps) > 0) {
		m = split(l, f, "|"); inroot[f[1]] = 1
		for (j = 2; j <= m; j++) deps[f[1], f[j]] = 1
	}
}
/^@root/ { where = "root"; next }
/^@plain/ { where = "plain"; next }
/^@nested / { where = substr($0, 9); next }
{
	p = $1
	for (i = 2; i <= NF; i++) {
		q = $i
		if (!(q in inroot)) continue
		rq = rel(q)
		if (where == "plain") {
			# (iii) only tests and the test kits import a test fixture
			rp0 = rel(p)
			if (fixture(rq) && !fixture(rp0) && rp0 !~ /test$/) report(rp0 " -> " rq, "a package other than a test or a test kit imports a test fixture")
			continue
		}
		if (where != "root") {
			# (i) another module importing the root module internal/
			if (internal(rq)) report(rel(p) " -> " rq, "another module imports the root module\047s internal/")
			continue
		}
		if (!(p in inroot)) continue
		rp1 = rel(p)
		if (demo(rp1) || !internal(rp1) || fixture(rp1) || !public(rq) || contract(rq)) continue
		if (rp1 ~ /^internal\//) {
			report(rp1 " -> " rq, "a low-level internal package imports a public package")
			continue
		}
		# X/internal/...: X is everything before the last /internal/
		x = rp1; sub(/\/internal(\/.*)?$/, "", x)
		if (rq == x || (q, mod "/" x) in deps) report(rp1 " -> " rq, "an internal package of " x " imports a public package that depends on " x)
	}
}
END {
	if (bad > 0) {
		printf "layercheck: %d import(s) against the layers (above: importer -> imported)\n", bad
		exit 1
	}
	print "layercheck: no module imports the root module\047s internal/, no internal package imports back up"
}'
