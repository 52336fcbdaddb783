#!/usr/bin/env python3
"""help_docs.py STRATA CLI_MD -- every --help agrees with docs/CLI.md.

For `strata --help` and each command's --help (serve, run, bench, bench
--mtp, bench --ngram, inspect, make-model, and any command `strata --help`
lists): the exit status is 0, the usage goes to stdout, every flag the help
prints is mentioned in that command's section of docs/CLI.md (the heading
"## `strata CMD`"; the text before the first "## " for `strata --help`),
and every flag in the first column of that section's tables is in the help.
-h/--help is every command's and is not checked against the tables.
"""
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])(--?[a-zA-Z][\w-]*)(?![\w=-])")
ALWAYS = {"-h", "--help"}


def sections(text):
    """{"": top text, "serve": ..., "bench --mtp": ...} by "## `strata X`" headings."""
    out, name, buf = {}, "", []
    for line in text.splitlines():
        m = re.match(r"^## `strata ([^`]+)`", line)
        if m or line.startswith("## "):
            out.setdefault(name, "\n".join(buf))
            name, buf = (m.group(1) if m else None), []
            continue
        buf.append(line)
    out.setdefault(name, "\n".join(buf))
    out.pop(None, None)
    return out


def table_flags(section):
    flags = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first = line.split(" | ")[0]
            flags.update(FLAG.findall(first.replace("\\|", "|")))
    return flags - ALWAYS


def mentioned(section):
    """Flags written in code spans anywhere in the section."""
    return {f for code in re.findall(r"`([^`]*)`", section) for f in FLAG.findall(code)}


def main():
    strata, cli_md = sys.argv[1], sys.argv[2]
    docs = sections(open(cli_md, encoding="utf-8").read())
    failures = []

    def help_of(args):
        p = subprocess.run([strata, *args, "--help"], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        name = " ".join(["strata", *args, "--help"])
        if p.returncode != 0:
            failures.append(f"{name}: exit status {p.returncode}, expected 0")
        if not p.stdout.strip():
            failures.append(f"{name}: nothing on stdout (stderr: {p.stderr[:200]!r})")
        return p.stdout

    top = help_of([])
    commands = re.findall(r"^  ([a-z][\w-]*)\s{2,}", top.split("commands:")[-1], re.M)
    if not commands:
        failures.append("strata --help lists no commands")
    for extra in ("bench --mtp", "bench --ngram"):
        if extra.split()[0] in commands:
            commands.append(extra)
    for key, args in [("", [])] + [(c, c.split()) for c in commands]:
        text = top if key == "" else help_of(args)
        title = f"strata {key} --help" if key else "strata --help"
        if key not in docs:
            failures.append(f"docs/CLI.md has no section \"## `strata {key}`\" for {title}")
            continue
        printed = set(FLAG.findall(text)) - ALWAYS
        documented = mentioned(docs[key])
        for f in sorted(printed - documented):
            failures.append(f"{title} prints {f}, which its docs/CLI.md section does not mention")
        for f in sorted(table_flags(docs[key]) - printed):
            failures.append(f"docs/CLI.md's `strata {key}` table lists {f}, which {title} lacks")
        print(f"checked {title}: {len(printed)} flags")

    for f in failures:
        print("FAIL:", f)
    if failures:
        print(f"{len(failures)} mismatch(es)")
        return 1
    print("every --help agrees with docs/CLI.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
