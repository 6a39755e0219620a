#!/usr/bin/env python3
"""unchecked_snprintf.py ROOT [DIR...]: lists every snprintf/vsnprintf call
in the shipped C sources (base, kernels, model, data, quality, tracking,
trainer, serve, launch, cli by default) whose result is thrown away - a call that stands as a statement
of its own, so a text cut short by the buffer goes on unnoticed. Exits 1
when there is one, naming each file:line; 0 when every call's result is
used (checked with gf_fits / gf_format, compared, or returned).
GF_FORMAT_FITS (gf/text.h) is the checked form of a text that fits by
construction: a call of it is no snprintf call here, and the one inside
its definition keeps and asserts its result.

A result that is used is not proof of a good check; this only catches the
calls nobody looks at. Comments and string literals are skipped."""
import os
import re
import sys

DEFAULT_DIRS = ["base", "kernels", "model", "data", "quality", "tracking", "trainer", "serve", "launch", "cli"]
CALL = re.compile(r"\b(v?snprintf)\s*\(")


def strip_comments_and_strings(src):
    """src with comments and the insides of string/char literals blanked,
    newlines kept, so offsets and line numbers stay."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", src[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def unchecked_calls(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        src = strip_comments_and_strings(f.read())
    found = []
    for m in CALL.finditer(src):
        # What precedes the call on its statement: only whitespace after a
        # ';', '{', '}' or ')' (an if/for/while body, or a case label's
        # ':'), or a (void) cast, means the value is dropped.
        k = m.start() - 1
        while k >= 0 and src[k] in " \t\n":
            k -= 1
        before = src[max(0, k - 5):k + 1]
        dropped = k < 0 or src[k] in ";{}" or before.endswith("(void)")
        if k >= 0 and src[k] == ":":
            # A case or goto label ends there, not a ?: operand.
            start = max(src.rfind(c, 0, k) for c in ";{}") + 1
            label = src[start:k + 1].strip()
            dropped = bool(re.match(r"(case\b.*|default|[A-Za-z_]\w*)\s*:$",
                                    label, re.S))
        if src[k] == ")" and not before.endswith("(void)"):
            # `if (x) snprintf(...)`, `else`-less bodies: the ')' closes a
            # condition when the call is the body of a statement.
            dropped = True
        if k >= 3 and src[k - 3:k + 1] == "else":
            dropped = True
        if dropped:
            found.append(src.count("\n", 0, m.start()) + 1)
    return found


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    dirs = sys.argv[2:] or DEFAULT_DIRS
    bad = []
    for d in dirs:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for name in sorted(files):
                if name.endswith((".c", ".h", ".cu", ".cuh")):
                    p = os.path.join(dirpath, name)
                    for line in unchecked_calls(p):
                        bad.append(f"{os.path.relpath(p, root)}:{line}")
    for b in sorted(bad):
        print(f"{b}: snprintf result not checked")
    if bad:
        print(f"{len(bad)} snprintf call(s) whose result is thrown away",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
