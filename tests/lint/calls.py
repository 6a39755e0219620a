#!/usr/bin/env python3
"""calls.py - circles of calls between the source files of the built
libraries.

An include graph without cycles can still hide a circle: a.c calls a
function of b.c, and b.c one of a.c, so neither file can be read, tested
or moved without the other. This reads each static library of a build
with `nm` (defined and undefined symbols of each object file), draws an
edge from the file that uses a symbol to the file that defines it, and
fails naming every ring of files (a strongly connected component of more
than one file), within a library or across libraries.

Usage: calls.py BUILD_DIR [--graph]
       calls.py --selftest   (two objects that call each other and a third
                              that only calls: one ring must be found)
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

from rings import rings

# Libraries of the shipped rooms; test and bench libraries are not read.
LIB_RE = re.compile(r"lib(gf_[a-z_]+|gfs_[a-z_]+|mlflow_[a-z_]+)\.a$")
SKIP = {"gf_data_test_util"}


def objects_of(lib):
    """{object name: (defined symbols, undefined symbols)} of one archive."""
    out = subprocess.run(["nm", "-A", "--defined-only", lib],
                         capture_output=True, text=True, check=True).stdout
    undef = subprocess.run(["nm", "-A", "--undefined-only", lib],
                           capture_output=True, text=True, check=True).stdout
    objs = {}
    for text, slot in ((out, 0), (undef, 1)):
        for line in text.splitlines():
            # libgf_x.a:file.c.o:0000000000000000 T name
            m = re.match(r"[^:]+:([^:]+):\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$",
                         line)
            if not m:
                continue
            obj, kind, name = m.groups()
            entry = objs.setdefault(obj, (set(), set()))
            if slot == 0 and kind in "TDBRGSVW" and kind.isupper():
                entry[0].add(name)
            elif slot == 1:
                entry[1].add(name)
    return objs


def libraries(build):
    libs = []
    for path in sorted(glob.glob(os.path.join(build, "**", "lib*.a"),
                                 recursive=True)):
        m = LIB_RE.search(os.path.basename(path))
        if m and m.group(1) not in SKIP and "/tests/" not in path \
                and "/bench/" not in path:
            libs.append((m.group(1), path))
    return libs


def edges_of(libs):
    defined, uses = {}, {}
    for name, path in libs:
        for obj, (defs, undefs) in objects_of(path).items():
            stem = obj[:-2] if obj.endswith(".o") else obj
            node = f"{name}:{stem}"
            uses[node] = undefs
            for sym in defs:
                defined.setdefault(sym, node)
    edges = {}
    for node, undefs in uses.items():
        edges[node] = sorted({defined[s] for s in undefs
                              if s in defined and defined[s] != node})
    return edges


def check(build, show):
    libs = libraries(build)
    if not libs:
        print(f"calls: no libraries under {build}")
        return 2
    edges = edges_of(libs)
    if show:
        for v in sorted(edges):
            for w in edges[v]:
                print(f"{v} -> {w}")
    found = rings(edges)
    for comp in found:
        print("calls: ring: " + " <-> ".join(comp))
    print(f"calls: {len(libs)} libraries, {len(edges)} files, "
          f"{sum(map(len, edges.values()))} file-to-file uses, "
          f"{len(found)} rings")
    return 1 if found else 0


def selftest():
    with tempfile.TemporaryDirectory() as d:
        srcs = {"a.c": "int b(void);\nint a(void) { return b(); }\n",
                "b.c": "int a(void);\nint b(void) { return a() + 1; }\n",
                "c.c": "int a(void);\nint c(void) { return a(); }\n"}
        objs = []
        for name, text in srcs.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
            obj = os.path.join(d, name + ".o")
            subprocess.run(["cc", "-c", "-o", obj, os.path.join(d, name)],
                           check=True)
            objs.append(obj)
        os.makedirs(os.path.join(d, "x"))
        subprocess.run(["ar", "rcs", os.path.join(d, "x", "libgf_self.a")]
                       + objs, check=True)
        found = rings(edges_of(libraries(d)))
        ok = found == [["gf_self:a.c", "gf_self:b.c"]]
        print("calls selftest:", "ok" if ok else f"found {found}")
        return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        sys.exit(selftest())
    if not sys.argv[1:]:
        print(__doc__)
        sys.exit(2)
    sys.exit(check(sys.argv[1], "--graph" in sys.argv[2:]))
