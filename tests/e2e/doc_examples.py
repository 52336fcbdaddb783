#!/usr/bin/env python3
"""doc_examples.py STRATA SOURCE_DIR -- the examples in README.md and docs/*.md run as written.

Every `curl` command in a sh/bash/console block is run with bash against a live server, its
address (127.0.0.1:8080) replaced by the test server's: it must exit 0 and answer 2xx (curl runs
with --fail-with-body, pipelines with pipefail, so `| grep x` must find x). Commands that send
`Authorization: Bearer sk-...` go to a second server started with the API keys of docs/GUIDE.md's
team config, taken from the guide itself. The servers run the built-in tiny model on the CPU
engine (no -m), as a new user's first `strata serve` does. README's Node.js SDK snippet runs in a
fresh `npm init` (CommonJS) project with tests/e2e's node_modules when they are installed.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
failures = []


def blocks(path, langs):
    text = open(path, encoding="utf-8").read()
    for m in FENCE.finditer(text):
        if m.group(1) in langs:
            yield m.group(2)


def curl_commands(body):
    """Whole curl commands of a block: backslash continuations and open quotes joined."""
    out, cur = [], None
    for line in body.split("\n"):
        if cur is None:
            stripped = re.sub(r"^\$ ", "", line.strip())
            if not stripped.startswith("curl "):
                continue
            cur = stripped
        else:
            cur += "\n" + line
        if not cur.rstrip().endswith("\\") and cur.count("'") % 2 == 0:
            out.append(cur)
            cur = None
    return out


class Server:
    def __init__(self, strata, args, home):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        env = dict(os.environ, HOME=home)
        self.proc = subprocess.Popen([strata, "serve", "--host", "127.0.0.1", "--port", "0", *args],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=env)
        self.url = None
        deadline = time.time() + 60
        while time.time() < deadline and self.url is None:
            with open(self.log.name, encoding="utf-8") as f:
                m = re.search(r"listening on (http://[^\s\"]+)", f.read())
            if m:
                self.url = m.group(1)
            elif self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if self.url is None:
            raise RuntimeError(f"strata serve {' '.join(args)} did not start:\n{self.text()}")
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"strata serve never became healthy:\n{self.text()}")

    def text(self):
        with open(self.log.name, encoding="utf-8") as f:
            return f.read()[-3000:]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.unlink(self.log.name)


def run_curl(where, cmd, server):
    script = ("set -o pipefail\n"
              "curl() { command curl -sS --fail-with-body --max-time 120 \"$@\"; }\n"
              + cmd.replace("http://127.0.0.1:8080", server.url)
                   .replace("http://localhost:8080", server.url))
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=180)
    short = " ".join(cmd.split())[:100]
    if p.returncode != 0:
        failures.append(f"{where}: `{short}` exited {p.returncode}: {(p.stdout + p.stderr)[-400:]}")
    else:
        print(f"ok:   {where}: {short}")


def team_config(src, home):
    """docs/GUIDE.md's team config (the yaml block with api_keys:), as written."""
    for body in blocks(os.path.join(src, "docs/GUIDE.md"), {"yaml"}):
        if "api_keys:" in body and "default_priority" in body:
            path = os.path.join(home, "team.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(body)
            return path
    failures.append("docs/GUIDE.md has no team config (a yaml block with api_keys:)")
    return None


def readme_sdk(src, server, tmp):
    """README's Node.js snippet in a default `npm init` project's index.js."""
    modules = os.path.join(src, "tests/e2e/node_modules")
    node = shutil.which("node")
    if not node or not os.path.isdir(os.path.join(modules, "openai")):
        failures.append("README SDK snippet: node or tests/e2e/node_modules/openai missing "
                        "(npm ci in tests/e2e)")
        return
    js = [b for b in blocks(os.path.join(src, "README.md"), {"js"})]
    if not js:
        failures.append("README.md has no js block")
        return
    proj = os.path.join(tmp, "npm-init")
    os.makedirs(proj)
    with open(os.path.join(proj, "package.json"), "w", encoding="utf-8") as f:
        json.dump({"name": "try-strata", "version": "1.0.0", "main": "index.js"}, f)  # npm init's
    os.symlink(modules, os.path.join(proj, "node_modules"))
    with open(os.path.join(proj, "index.js"), "w", encoding="utf-8") as f:
        f.write(js[0].replace("http://127.0.0.1:8080", server.url))
    p = subprocess.run([node, "index.js"], cwd=proj, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or not p.stdout.strip():
        failures.append(f"README SDK snippet as index.js: exit {p.returncode}: {p.stderr[-600:]}")
    else:
        print("ok:   README.md: the Node.js SDK snippet runs as index.js (CommonJS)")


def main():
    strata, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    docs = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs/*.md")))
    tmp = tempfile.mkdtemp(prefix="strata-docs-")
    plain = keyed = None
    try:
        plain = Server(strata, ["--batch"], tmp)
        cfg = team_config(src, tmp)
        keyed = Server(strata, ["--config", cfg], tmp) if cfg else None
        n = 0
        for path in docs:
            where = os.path.relpath(path, src)
            for body in blocks(path, {"sh", "bash", "console", "shell"}):
                for cmd in curl_commands(body):
                    n += 1
                    if "Bearer sk-" in cmd:
                        if keyed:
                            run_curl(where, cmd, keyed)
                    else:
                        run_curl(where, cmd, plain)
        if n < 5:
            failures.append(f"only {n} curl examples found: is the extraction broken?")
        readme_sdk(src, plain, tmp)
    except RuntimeError as e:
        failures.append(str(e))
    finally:
        for s in (plain, keyed):
            if s:
                s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("every example in README.md and docs/*.md ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
