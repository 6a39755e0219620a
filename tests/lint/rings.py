"""rings.py - the strongly connected components of a directed graph
(Tarjan), shared by layers.py (files that include each other) and calls.py
(files that call each other)."""
import sys


def rings(edges):
    """Every strongly connected component of more than one node of edges
    ({node: [nodes it points at]}), each sorted, in the order found."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out
