#!/usr/bin/env bash
# Tests scripts/layercheck.sh on a throwaway module with one import against
# each rule: the check must fail naming exactly those, and pass once they
# are gone.
#
#   scripts/layercheck-test.sh    # exit 1 and a diff when the check is wrong
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOFLAGS=-mod=mod GOWORK=off

put() { mkdir -p "$tmp/$(dirname "$1")"; cat >"$tmp/$1"; }
put go.mod <<<'module example.com/lib

go 1.22'
put contract/contract.go <<<'package contract'
put relay/relay.go <<<'package relay

import _ "example.com/lib/relay/internal/engine"'
put kit/kit.go <<<'package kit

import _ "example.com/lib/relay"'
# (ii) an internal package of relay imports a public package that depends on relay
put relay/internal/engine/engine.go <<<'package engine

import _ "example.com/lib/health"'
put health/health.go <<<'package health'
put relay/internal/cycle/cycle.go <<<'package cycle

import _ "example.com/lib/kit"'
# (ii) a low-level internal package imports a public one; the contract is fine
put internal/low/low.go <<<'package low

import (
	_ "example.com/lib/relay"
	_ "example.com/lib/contract"
)'
put internal/low/low_test.go <<<'package low

import _ "example.com/lib/health"'
# (iii) a test fixture may import public packages; only tests and kits import it
put internal/relayfixture/fixture.go <<<'package relayfixture

import _ "example.com/lib/relay"'
put relay/relay_test.go <<<'package relay_test

import _ "example.com/lib/internal/relayfixture"'
put relaytest/kit.go <<<'package relaytest

import _ "example.com/lib/internal/relayfixture"'
put console/console.go <<<'package console

import _ "example.com/lib/internal/relayfixture"'
put internal/ok/ok.go <<<'package ok

import _ "example.com/lib/contract"'
# (i) another module imports the root module's internal/, once only under a tag
put other/go.mod <<<'module example.com/lib/other

go 1.22

require example.com/lib v0.0.0

replace example.com/lib => ../'
put other/main.go <<<'package main

import _ "example.com/lib/internal/ok"

func main() {}'
put other/tagged.go <<<'//go:build special

package main

import _ "example.com/lib/internal/low"'
put other/sub/sub_test.go <<<'package sub_test

import _ "example.com/lib/internal/ok"'
put other/sub/sub.go <<<'package sub'

want="internal/low -> relay    (a low-level internal package imports a public package)
internal/low -> health    (a low-level internal package imports a public package)
relay/internal/cycle -> kit    (an internal package of relay imports a public package that depends on relay)
console -> internal/relayfixture    (a package other than a test or a test kit imports a test fixture)
other -> internal/ok    (another module imports the root module's internal/)
other -> internal/low    (another module imports the root module's internal/)
other/sub -> internal/ok    (another module imports the root module's internal/)
layercheck: 7 import(s) against the layers (above: importer -> imported)"
rc=0
got=$("$here/layercheck.sh" "$tmp" 2>&1) || rc=$?
if [ "$rc" -ne 1 ] || ! diff <(sort <<<"$want") <(sort <<<"$got"); then
	echo "layercheck-test: on the violating module: exit $rc (want 1), output above (< want, > got)"
	exit 1
fi

rm -r "$tmp/internal/low" "$tmp/relay/internal/cycle" "$tmp/other/tagged.go" "$tmp/console" "$tmp/other/sub/sub_test.go"
sed -i '/^import/d' "$tmp/other/main.go"
if ! got=$("$here/layercheck.sh" "$tmp" 2>&1); then
	echo "$got"
	echo "layercheck-test: the clean module fails the check"
	exit 1
fi
echo "layercheck-test: the check fails on each violating import and passes without them"
