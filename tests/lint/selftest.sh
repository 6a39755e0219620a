#!/usr/bin/env bash
# lint_snprintf_selftest: unchecked_snprintf.py reports exactly the calls
# marked DROPPED in selftest/calls.c (so the lint can fail), and nothing in
# a file where every result is used.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
want=$(grep -n 'DROPPED \*/' "$HERE/selftest/calls.c" | cut -d: -f1 | sort -n | tr '\n' ' ')
rc=0
out=$(python3 "$HERE/unchecked_snprintf.py" "$HERE" selftest 2>/dev/null) || rc=$?
got=$(printf '%s\n' "$out" | sed -n 's/^selftest\/calls.c:\([0-9]*\):.*/\1/p' | sort -n | tr '\n' ' ')
if [ "$rc" -ne 1 ]; then echo "FAIL: the lint exited $rc on calls.c, want 1"; exit 1; fi
if [ "$got" != "$want" ]; then
  echo "FAIL: the lint reported lines [$got], want [$want]"; exit 1
fi
echo "PASS: the lint reports lines $want and exits 1"
