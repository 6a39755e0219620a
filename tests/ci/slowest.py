#!/usr/bin/env python3
"""slowest.py - the slowest tests of one or more ctest runs.

    slowest.py [-n N] SUITE=JUNIT [SUITE=JUNIT ...]

Reads the JUnit files ctest wrote (`ctest --output-junit FILE`) and prints
the N (10) tests that took longest across them, each with its suite, its
seconds and its share of that suite's summed test time, then each suite's
summed test time. A suite whose file is missing or unreadable is named and
skipped (exit 2 at the end); the others are still reported.

Not a gate: it exits 0 whatever the times are. Budgets are read from the
stage times tests/run-all.sh prints, not asserted here.
"""
import argparse
import sys
import xml.etree.ElementTree as ET


def cases(path):
    """[(name, seconds)] of every test ctest ran (skipped ones too)."""
    out = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        try:
            t = float(tc.get("time", "0") or 0)
        except ValueError:
            t = 0.0
        out.append((tc.get("name", "?"), t))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("suites", nargs="+", metavar="SUITE=JUNIT")
    a = ap.parse_args(argv)
    rows, totals, bad = [], {}, []
    for spec in a.suites:
        suite, sep, path = spec.partition("=")
        if not sep or not suite or not path:
            ap.error(f"'{spec}': expected SUITE=JUNIT")
        try:
            cs = cases(path)
        except (OSError, ET.ParseError) as e:
            print(f"slowest: {suite}: cannot read {path}: {e}")
            bad.append(suite)
            continue
        totals[suite] = sum(t for _, t in cs)
        rows += [(t, suite, name) for name, t in cs]
    rows.sort(reverse=True)
    print(f"=== the {min(a.n, len(rows))} slowest tests")
    for t, suite, name in rows[:a.n]:
        share = 100.0 * t / totals[suite] if totals[suite] > 0 else 0.0
        print(f"  {t:8.1f} s  {share:4.1f} %  {suite:10} {name}")
    for suite, total in totals.items():
        print(f"  {suite}: {total:.0f} s of test time in all")
    return 2 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
