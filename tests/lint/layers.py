#!/usr/bin/env python3
"""layers.py - the include graph of the shipped C/CUDA sources against the
rooms of docs/design.md §3.

Each file belongs to the room (top folder) it lives in. An include may
point at the file's own room or at a room below it:

    base <- kernels <- model <- data <- quality <- {trainer, serve}
         <- launch <- cli;   tracking <- {trainer, serve} (its bridge to
    gf_status, tracking/bridge, uses base only)

Fails (exit 1) naming every include that points up or sideways, and every
cycle among files (a .c that includes its own header is not a cycle: only
headers and sources that include each other in a ring are). Prints the
room-to-room edges it saw with their counts (`--graph`).

Usage: layers.py ROOT [--graph]
       layers.py --selftest   (a tree of four files with one upward
                               include and one cycle: both must be found)
"""
import os
import re
import sys
import tempfile

from rings import rings

# Room -> the rooms it may include (besides itself).
ALLOWED = {
    "base": set(),
    "tracking": set(),
    "tracking/bridge": {"base", "tracking"},
    "kernels": {"base"},
    "model": {"base", "kernels"},
    "data": {"base", "kernels", "model"},
    "quality": {"base", "kernels", "model", "data"},
    "trainer": {"base", "kernels", "model", "data", "quality", "tracking",
                "tracking/bridge"},
    "serve": {"base", "kernels", "model", "data", "quality", "tracking",
              "tracking/bridge"},
    "launch": {"base", "kernels", "model", "data", "quality", "tracking",
               "tracking/bridge", "trainer"},
    "cli": {"base", "kernels", "model", "data", "quality", "tracking",
            "tracking/bridge", "trainer", "serve", "launch"},
}
SOURCE_EXT = (".c", ".h", ".cu", ".cuh")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(rel):
    if rel.startswith("tracking/bridge/"):
        return "tracking/bridge"
    top = rel.split("/", 1)[0]
    return top if top in ALLOWED else None


def collect(root):
    files = {}
    for top in ALLOWED:
        if "/" in top:
            continue
        base = os.path.join(root, top)
        for d, _, names in os.walk(base):
            for n in names:
                if n.endswith(SOURCE_EXT):
                    p = os.path.join(d, n)
                    files[os.path.relpath(p, root)] = p
    return files


def resolve(rel, target, files):
    """The tree file that `#include "target"` in rel names, or None (a
    system or generated header)."""
    here = os.path.dirname(rel)
    cand = os.path.normpath(os.path.join(here, target))
    if cand in files:
        return cand
    hits = [f for f in files if f.endswith("/include/" + target)
            or f.endswith("/" + target) and "/include/" in f]
    if len(hits) == 1:
        return hits[0]
    hits = [f for f in files if f.endswith("/" + target)]
    if len(hits) == 1:
        return hits[0]
    # Same name in several rooms: the including file's room first.
    mine = [f for f in hits if room_of(f) == room_of(rel)]
    return mine[0] if len(mine) == 1 else None


def graph(root):
    files = collect(root)
    edges = {}
    for rel, path in files.items():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        edges[rel] = [t for t in (resolve(rel, inc, files)
                                  for inc in INCLUDE_RE.findall(text)) if t]
    return edges


def check(root, show_graph=False):
    edges = graph(root)
    bad = []
    room_edges = {}
    for src, targets in sorted(edges.items()):
        a = room_of(src)
        for t in targets:
            b = room_of(t)
            if a != b:
                room_edges[(a, b)] = room_edges.get((a, b), 0) + 1
                if b not in ALLOWED[a]:
                    bad.append(f"{src} includes {t}: {a} may not include {b}")
    loops = rings(edges)
    if show_graph:
        for (a, b), n in sorted(room_edges.items()):
            print(f"{a:16} -> {b:16} {n}")
    for line in bad:
        print("layers: " + line)
    for comp in loops:
        print("layers: include cycle: " + " <-> ".join(comp))
    print(f"layers: {len(edges)} files, {sum(map(len, edges.values()))} "
          f"includes within the tree, {len(bad)} upward, {len(loops)} cycles")
    return 1 if bad or loops else 0


def selftest():
    with tempfile.TemporaryDirectory() as d:
        def put(rel, text):
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)
        put("base/include/gf/a.h", '#include "gf/k.h"\n')      # up
        put("kernels/include/gf/k.h", '#include "gf/a.h"\n')
        put("model/src/x.h", '#include "y.h"\n')              # cycle
        put("model/src/y.h", '#include "x.h"\n')
        edges = graph(d)
        ups = [(s, t) for s, ts in edges.items() for t in ts
               if room_of(t) != room_of(s)
               and room_of(t) not in ALLOWED[room_of(s)]]
        loops = rings(edges)
        ok = (ups == [("base/include/gf/a.h", "kernels/include/gf/k.h")]
              and ["model/src/x.h", "model/src/y.h"] in loops)
        print("layers selftest:", "ok" if ok else f"missed: {ups} {loops}")
        return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        sys.exit(selftest())
    if not sys.argv[1:]:
        print(__doc__)
        sys.exit(2)
    sys.exit(check(sys.argv[1], "--graph" in sys.argv[2:]))
