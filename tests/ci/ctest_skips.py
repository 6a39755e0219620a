#!/usr/bin/env python3
"""ctest_skips.py - the skip gate: which tests of one ctest run skipped, and
why; under CI a skip is a failure unless the test carries the `gpu` label.

    ctest_skips.py BUILD_DIR [--junit FILE] [--ctest CTEST]

Reads what ctest wrote for the run (`ctest --output-junit FILE`, by default
BUILD_DIR/ctest-junit.xml) and the tests' labels (`ctest --show-only=json-v1`
in BUILD_DIR; the JUnit file has none). A test counts as skipped when ctest
recorded it so because of SKIP_RETURN_CODE or SKIP_REGULAR_EXPRESSION (the
project's tests exit 77). Its reason is the last line of its output that
says `SKIP: ...` (SKIP_TEST in tests/support/check.h prints one; `skip:` and
`skipped:` count too).

Prints the count and each skipped test with its labels and reason. With CI
set to true (or 1, yes), exits 1 when a test without the `gpu` label skipped,
naming each one with its reason: CI has everything such a test needs, so its
skip means something it relies on is missing or broken. GPU tests may skip
(CI has no GPU). Without CI it only reports: a developer without Slurm or
.venv sees skips, not failures.

Exit status: 0 (no skip, or only allowed ones, or not under CI), 1 (under CI,
a test outside `gpu` skipped), 2 (usage, or the results cannot be read).
Not a test runner: it runs nothing but `ctest --show-only`.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ALLOWED_LABEL = "gpu"
# "SKIP: why", "skip: why", "skipped: why", "fresh-machine: skipped: why"
REASON_RE = re.compile(r"\bskip(?:ped)?\s*:\s*(\S.*)$", re.IGNORECASE)
REASON_MAX = 300  # characters of a reason shown


def under_ci():
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def reason_of(output):
    """The last line of a test's output that says why it skipped."""
    why = None
    for line in (output or "").splitlines():
        m = REASON_RE.search(line)
        if m:
            why = m.group(1).strip()
    if not why:
        return "(the test printed no SKIP: line saying why)"
    return why if len(why) <= REASON_MAX else why[:REASON_MAX] + "..."


def skipped_tests(junit):
    """[(name, reason)] of the tests ctest recorded as skipped, in order."""
    root = ET.parse(junit).getroot()
    out = []
    for tc in root.iter("testcase"):
        sk = tc.find("skipped")
        # ctest also writes <skipped> for tests it could not start (missing
        # executable, failed fixture): those are failures ctest reports.
        if sk is None or not sk.get("message", "").startswith("SKIP_"):
            continue
        out.append((tc.get("name", "?"), reason_of(tc.findtext("system-out"))))
    return out


def labels_by_test(build_dir, ctest):
    r = subprocess.run([ctest, "--show-only=json-v1"], cwd=build_dir,
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{ctest} --show-only=json-v1 in {build_dir} "
                           f"exited {r.returncode}: {r.stderr.strip()}")
    labels = {}
    for t in json.loads(r.stdout).get("tests", []):
        for p in t.get("properties", []):
            if p.get("name") == "LABELS":
                labels[t.get("name")] = list(p.get("value") or [])
        labels.setdefault(t.get("name"), [])
    return labels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--junit", help="ctest's --output-junit file "
                    "(default BUILD_DIR/ctest-junit.xml)")
    ap.add_argument("--ctest", default=os.environ.get("CTEST", "ctest"),
                    help="the ctest to ask for labels (default $CTEST or ctest)")
    a = ap.parse_args()
    junit = a.junit or os.path.join(a.build_dir, "ctest-junit.xml")
    name = os.path.basename(os.path.normpath(a.build_dir))
    try:
        skipped = skipped_tests(junit)
        labels = labels_by_test(a.build_dir, a.ctest) if skipped else {}
    except (OSError, ET.ParseError, RuntimeError, ValueError) as e:
        print(f"ctest_skips: cannot read the results of {a.build_dir}: {e}",
              file=sys.stderr)
        return 2

    print(f"=== {name}: {len(skipped)} test{'' if len(skipped) == 1 else 's'}"
          " skipped")
    bad = []
    for test, why in skipped:
        lab = labels.get(test, [])
        print(f"  {test} [{','.join(lab) or 'no label'}]: {why}")
        if ALLOWED_LABEL not in lab:
            bad.append((test, why))
    if not bad:
        return 0
    if not under_ci():
        print(f"=== {name}: {len(bad)} of them outside the `{ALLOWED_LABEL}` "
              "label: a failure under CI=true, not here")
        return 0
    print(f"=== FAIL: {name}: {len(bad)} test{'' if len(bad) == 1 else 's'} "
          f"outside the `{ALLOWED_LABEL}` label skipped under CI=true "
          "(CI installs what they need):")
    for test, why in bad:
        print(f"  {test}: {why}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
