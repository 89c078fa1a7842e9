#!/usr/bin/env bash
# Runs each fuzz target for a time: scripts/fuzz.sh <fuzztime> <pkg:Target>...
# (pkg relative to the repository, run in the module that holds it).
#
# A target fails on what it found: a crasher (written to the package's
# testdata/fuzz/<Target>/) or any other test failure. Go's fuzz
# coordinator before Go 1.27 can also end a clean run with a bare "context
# deadline exceeded" when -fuzztime expires while a worker is busy (a race
# in the coordinator, fixed in Go 1.27): such a run, with nothing written,
# is run once more, and fails only if it happens again.
set -euo pipefail
go=${GO:-go}
fuzztime=$1
shift
for t in "$@"; do
	pkg=${t%%:*} name=${t##*:}
	corpus="$pkg/testdata/fuzz/$name"
	mod=$pkg
	while [ ! -f "$mod/go.mod" ]; do mod=$(dirname "$mod"); done
	rel=./${pkg#"$mod"}
	rel=${rel/#.\/\//./}
	for attempt in 1 2; do
		echo "fuzz: $name ($pkg, $fuzztime)"
		before=$(ls "$corpus" 2>/dev/null | sort || true)
		log=$(mktemp)
		if "$go" -C "$mod" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" "$rel" 2>&1 | tee "$log"; then
			rm -f "$log"
			break
		fi
		after=$(ls "$corpus" 2>/dev/null | sort || true)
		if [ "$attempt" = 1 ] && [ "$before" = "$after" ] &&
			grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"; then
			echo "fuzz: $name: the coordinator's end-of-time race (nothing found, nothing written); running it once more"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		echo "fuzz: $name failed" >&2
		exit 1
	done
done
