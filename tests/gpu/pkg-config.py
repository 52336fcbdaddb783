#!/usr/bin/env python3
# pkg-config.py -- a minimal pkg-config for the GPU check (tests/gpu/run.sh),
# used only when the device machine has no pkg-config and the carried
# pkgconf binary cannot run there (it is built against glibc 2.34+).
#
# It answers what CMake's FindPkgConfig asks about the carried .pc files
# (check, libsubunit, libcjson, libmicrohttpd, yaml-0.1): --version,
# --exists, --modversion, --variable=NAME, --cflags[-only-I|-only-other],
# --libs[-only-L|-only-l|-only-other], --static, --print-errors,
# --short-errors. Search path: PKG_CONFIG_PATH then PKG_CONFIG_LIBDIR (or
# the usual system directories). PKG_CONFIG_SYSROOT_DIR is put in front of
# absolute -I and -L paths and variable values, as pkgconf does. Requires
# are followed (and Requires.private / Libs.private with --static only).
import os
import re
import sys

SYSDIRS = ["/usr/lib/x86_64-linux-gnu/pkgconfig", "/usr/lib64/pkgconfig", "/usr/lib/pkgconfig",
           "/usr/share/pkgconfig", "/usr/local/lib/pkgconfig"]


def search_dirs():
    dirs = [d for d in os.environ.get("PKG_CONFIG_PATH", "").split(":") if d]
    libdir = os.environ.get("PKG_CONFIG_LIBDIR")
    dirs += [d for d in libdir.split(":") if d] if libdir is not None else SYSDIRS
    return dirs


def parse(name):
    for d in search_dirs():
        path = os.path.join(d, name + ".pc")
        if os.path.isfile(path):
            break
    else:
        return None
    var, kw = {"pcfiledir": os.path.dirname(path)}, {}
    expand = lambda v: re.sub(r"\$\{(\w+)\}", lambda m: var.get(m.group(1), ""), v)
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.split("#", 1)[0].strip()
        m = re.match(r"^([\w.]+)\s*([=:])\s*(.*)$", line)
        if not m:
            continue
        if m.group(2) == "=":
            var[m.group(1)] = expand(m.group(3))
        else:
            kw[m.group(1).lower()] = expand(m.group(3))
    return var, kw


def requires(text):
    # "a >= 1.0, b c" -> [a, b, c]
    out, toks = [], re.split(r"[\s,]+", text.strip())
    skip = False
    for t in toks:
        if not t:
            continue
        if skip:
            skip = False
            continue
        if t in ("<", "<=", "=", ">=", ">", "!="):
            skip = True
            continue
        out.append(t)
    return out


def collect(names, static, seen, flags, field):
    for n in names:
        if n in seen:
            continue
        seen.add(n)
        pc = parse(n)
        if pc is None:
            raise KeyError(n)
        var, kw = pc
        flags += kw.get(field, "").split()
        if field == "libs" and static:
            flags += kw.get("libs.private", "").split()
        reqs = requires(kw.get("requires", ""))
        if static:
            reqs += requires(kw.get("requires.private", ""))
        collect(reqs, static, seen, flags, field)


def sysroot(flags):
    root = os.environ.get("PKG_CONFIG_SYSROOT_DIR", "")
    out = []
    for f in flags:
        for p in ("-I", "-L"):
            if root and f.startswith(p + "/") and not f.startswith(p + root):
                f = p + root + f[2:]
        if f not in out or not (f.startswith("-I") or f.startswith("-L")):
            out.append(f)
    return out


def main(argv):
    opts = [a for a in argv if a.startswith("--")]
    mods = requires(" ".join(a for a in argv if not a.startswith("--")))
    static = "--static" in opts
    if "--version" in opts:
        print("0.29.2")
        return 0
    try:
        pcs = []
        for m in mods:
            pc = parse(m)
            if pc is None:
                raise KeyError(m)
            pcs.append(pc)
        root = os.environ.get("PKG_CONFIG_SYSROOT_DIR", "")
        for o in opts:
            if o.startswith("--variable="):
                vals = [pc[0].get(o.split("=", 1)[1], "") for pc in pcs]
                print(" ".join(root + v if root and v.startswith("/") else v for v in vals))
                return 0
        if "--modversion" in opts:
            for pc in pcs:
                print(pc[1].get("version", ""))
            return 0
        words = []
        if any(o.startswith("--cflags") for o in opts):
            flags = []
            collect(mods, static, set(), flags, "cflags")
            flags = sysroot(flags)
            if "--cflags-only-I" in opts:
                flags = [f for f in flags if f.startswith("-I")]
            elif "--cflags-only-other" in opts:
                flags = [f for f in flags if not f.startswith("-I")]
            words += flags
        if any(o.startswith("--libs") for o in opts):
            flags = []
            collect(mods, static, set(), flags, "libs")
            flags = sysroot(flags)
            if "--libs-only-L" in opts:
                flags = [f for f in flags if f.startswith("-L")]
            elif "--libs-only-l" in opts:
                flags = [f for f in flags if f.startswith("-l")]
            elif "--libs-only-other" in opts:
                flags = [f for f in flags if not f.startswith("-l") and not f.startswith("-L")]
            words += flags
        if words or any(o.startswith("--cflags") or o.startswith("--libs") for o in opts):
            print(" ".join(words))
        return 0
    except KeyError as e:
        if "--print-errors" in opts:
            print("Package %s was not found in the pkg-config search path." % e.args[0],
                  file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
