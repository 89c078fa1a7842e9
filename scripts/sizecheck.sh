#!/usr/bin/env bash
# Refuses tracked files over 1 MB (build outputs, binaries, dumps) unless
# they are listed in scripts/large-files.txt, the documented test data.
#
#   scripts/sizecheck.sh    # exit 1 and one line per offending file
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
allowed=scripts/large-files.txt
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	[ "$size" -gt "$limit" ] || continue
	if [ -f "$allowed" ] && grep -qxF "$f" <(grep -v '^#' "$allowed"); then
		continue
	fi
	echo "sizecheck: $f is $size bytes (over 1 MB): keep build outputs out of git, or list documented test data in $allowed"
	bad=1
done < <(git ls-files -z)
exit $bad
