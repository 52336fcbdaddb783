#!/usr/bin/env python3
"""check_layout.py -- the layout rules docs/DEVELOPING.md states, checked on a build tree.

1. No import cycle inside a folder of src/: file A "imports" file B when A's
   object uses a symbol B's object defines (read with nm). Within one folder
   these edges must form no cycle; a cycle means two files are one job split
   badly, or a piece belongs in a third file (or a lower folder). The
   folders themselves form no cycle either: dependencies point one way.
2. Every private header under src/ (a folder's own header) has at most
   MAX_HEADER lines: a folder shares a small surface, never "everything".

Usage: check_layout.py BUILD_DIR [SOURCE_DIR]
Exits 1 listing every violation, 0 when the tree keeps both rules.
"""
import os
import subprocess
import sys
from collections import defaultdict

MAX_HEADER = 300


def objects(build_dir):
    """(source path relative to the source root, object path) for every C object of src/."""
    for root, _, files in os.walk(os.path.join(build_dir, "src")):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            obj = os.path.join(root, f)
            rel = os.path.relpath(obj, build_dir)
            # src/<dir>/CMakeFiles/<lib>.dir/<sub/file>.c.o -> src/<dir>/<sub/file>.c
            head, _, tail = rel.partition("/CMakeFiles/")
            if not tail:
                continue
            tail = tail.split("/", 1)[1]
            yield os.path.join(head, tail[: -len(".o")]), obj


def symbols(obj):
    """(defined, used) external symbols of one object."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRCGSV":
            defined.add(name)
    return defined, used


def cycles(graph):
    """Strongly connected components with more than one file (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def folder_cycles(build_dir):
    defs, uses = {}, {}
    for src, obj in objects(build_dir):
        defs[src], uses[src] = symbols(obj)
    owner = {}
    for src, names in defs.items():
        for n in names:
            owner[n] = src
    graphs = defaultdict(lambda: defaultdict(set))
    for src, names in uses.items():
        folder = os.path.dirname(src)
        graphs[folder][src]
        for n in names:
            dst = owner.get(n)
            if dst and dst != src and os.path.dirname(dst) == folder:
                graphs[folder][src].add(dst)
    problems = []
    for folder in sorted(graphs):
        for comp in cycles(graphs[folder]):
            names = ", ".join(os.path.basename(c) for c in comp)
            problems.append(f"import cycle in {folder}/: {names}")
    folders = defaultdict(set)
    for src, names in uses.items():
        folders[os.path.dirname(src)]
        for n in names:
            dst = owner.get(n)
            if dst and os.path.dirname(dst) != os.path.dirname(src):
                folders[os.path.dirname(src)].add(os.path.dirname(dst))
    for comp in cycles(folders):
        problems.append("import cycle between folders: " + ", ".join(comp))
    return problems, len(defs)


def big_headers(source_dir):
    problems = []
    for root, _, files in os.walk(os.path.join(source_dir, "src")):
        for f in sorted(files):
            if f.endswith(".h"):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    n = sum(1 for _ in fh)
                if n > MAX_HEADER:
                    rel = os.path.relpath(path, source_dir)
                    problems.append(f"private header {rel}: {n} lines (limit {MAX_HEADER})")
    return problems


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build_dir = sys.argv[1]
    source_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..")
    problems, n_objects = folder_cycles(build_dir)
    if n_objects == 0:
        print(f"check_layout: no objects under {build_dir}/src: build first", file=sys.stderr)
        return 1
    problems += big_headers(source_dir)
    for p in problems:
        print(p)
    print(f"check_layout: {n_objects} objects, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
