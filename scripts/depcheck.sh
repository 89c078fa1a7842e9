#!/usr/bin/env bash
# Keeps the library free of the reference domain: no generic package, tests
# included, may depend on an example (examples/..., among them the catalog
# demo's module examples/catalog-demo) or Elasticsearch (github.com/elastic/...,
# or package elastic which wraps it), except package elastic and its test
# server (elastic/...), which may use the Elasticsearch client and nothing
# else of that list.
#
#   scripts/depcheck.sh     # exit 1 and one line per offending import chain
#
# Generic: every package of the root module except the examples in it
# (examples/minimal), api/ and the tools under cmd/ other than the daemons
# cmd/publisher and cmd/relayctl. Each chain starts at a generic package
# (or its test, marked
# "(test)") and stops at the first forbidden package; a chain through another
# generic package is reported for that package only. Paths are relative to
# the module. scripts/depcheck-allow.txt lists the chains allowed for now, one
# per line. Then runs scripts/layercheck.sh (the import layers of the root
# module and the modules beside it).
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
forbidden="^($mod/examples|$mod/elastic|github\\.com/elastic)(/|\$)"
# What package elastic (and elastic/...) may not depend on.
forbiddenES="^($mod/examples)(/|\$)"
esRoot="^$mod/elastic(/|\$)"
domain="^$mod/(api|cmd|examples)(/|\$)"

generic=$(go list ./... | grep -Ev "$domain" || true)
generic="$generic
$mod/cmd/publisher
$mod/cmd/relayctl"

# One line per package of the closure, tests included: path|import|import...
# (a test variant is "p [q.test]"; "p.test" is the generated test main).
rc=0
go list -deps -test -f '{{.ImportPath}}{{range .Imports}}|{{.}}{{end}}' $generic |
awk -F'|' -v mod="$mod/" -v forbidden="$forbidden" -v forbiddenES="$forbiddenES" -v esRoot="$esRoot" -v generic="$(echo "$generic" | tr '\n' ' ')" -v allowfile=scripts/depcheck-allow.txt '
function base(p) { sub(/ \[.*\]$/, "", p); sub(/_test$/, "", p); return p }
function short(p) { return index(p, mod) == 1 ? substr(p, length(mod) + 1) : p }
BEGIN {
	n = split(generic, g, " "); for (i = 1; i <= n; i++) if (g[i] != "") isgeneric[g[i]] = 1
	while ((getline l < allowfile) > 0) {
		sub(/#.*/, "", l); gsub(/^[ \t]+|[ \t]+$/, "", l)
		if (l != "") allowed[l] = 1
	}
}
{
	imports[$1] = ""
	for (i = 2; i <= NF; i++) imports[$1] = imports[$1] (i > 2 ? "|" : "") $i
	nodes[++count] = $1
}
END {
	bad = 0
	for (k = 1; k <= count; k++) {
		root = nodes[k]
		if (root ~ /\.test$/ || !(base(root) in isgeneric)) continue
		if (root ~ / \[/ && index(root, " [" base(root) ".test]") == 0) continue
		label = base(root) (root ~ / \[/ ? " (test)" : "")
		deny = base(root) ~ esRoot ? forbiddenES : forbidden
		delete seen; delete parent
		head = 1; tail = 1; queue[1] = root; seen[root] = 1
		while (head <= tail) {
			cur = queue[head++]
			if (imports[cur] == "") continue
			m = split(imports[cur], im, "|")
			for (j = 1; j <= m; j++) {
				nxt = im[j]
				if (nxt in seen) continue
				seen[nxt] = 1; parent[nxt] = cur
				if (base(nxt) ~ deny) {
					chain = short(base(nxt))
					for (p = cur; p != root; p = parent[p]) chain = short(base(p)) " -> " chain
					line = short(label) " -> " chain
					if (line in allowed) { used[line] = 1; continue }
					if (!(line in printed)) { print line; printed[line] = 1; bad++ }
					continue
				}
				if (base(nxt) in isgeneric && base(nxt) != base(root)) continue
				queue[++tail] = nxt
			}
		}
	}
	for (l in allowed) if (!(l in used)) { print "depcheck: " allowfile ": \"" l "\" is allowed but no longer found: remove it"; bad++ }
	if (bad > 0) {
		printf "depcheck: %d import chain(s) from generic packages to an example or Elasticsearch (above: generic package -> its imports -> forbidden package)\n", bad
		exit 1
	}
	print "depcheck: no generic package depends on an example or Elasticsearch"
}' || rc=1
scripts/layercheck.sh || rc=1
exit $rc
