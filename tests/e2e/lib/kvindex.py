"""kvindex.py -- what the KV-event tests share (tests/e2e/kv_events_test.py,
tests/e2e/multipod_test.py; docs/KV-EVENTS.md).

- Strata: start `strata serve --backend sim` on 127.0.0.1 port 0 and talk
  to it over HTTP (the standard library only).
- Indexer: a subscriber that keeps the view llm-d's KV indexer keeps
  (llm-d-kv-cache pkg/kvevents/pool.go): per pod and model, engine key ->
  its parent and tokens, and its own "request keys" recomputed from the
  tokens alone (chained over [parent, tokens]), so that scoring a prompt
  never uses Strata's engine keys. It checks the wire rules as it goes:
  three frames, the topic's shape, sequence numbers +1 from 0 per pod, a
  stored block's parent announced and present, full blocks only, removals
  of present keys, no present child left without its parent.

Python modules missing (Debian python3-zmq, python3-msgpack) or a strata
built without libzmq/msgpack-c: the test exits 77, which ctest reports
as skipped.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

SKIP = 77

try:
    import msgpack
    import zmq
except ImportError as e:  # the caller decides to skip
    zmq = None
    msgpack = None
    IMPORT_ERROR = str(e)
else:
    IMPORT_ERROR = None


def skip_without_modules():
    if IMPORT_ERROR:
        print(f"SKIP: {IMPORT_ERROR} (apt-get install python3-zmq python3-msgpack)")
        sys.exit(SKIP)


class Strata:
    """One `strata serve --backend sim` on 127.0.0.1, port 0."""

    def __init__(self, args, timeout=20):
        binary = os.environ.get("STRATA_BIN")
        if not binary:
            raise RuntimeError("STRATA_BIN is not set")
        self.proc = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--backend", "sim", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.log = ""
        self.url = None
        deadline = time.monotonic() + timeout
        while not self.url:
            line = self.proc.stdout.readline()
            if not line:
                code = self.proc.wait()
                if "no ZeroMQ/msgpack support" in self.log + line:
                    print("SKIP: this strata was built without libzmq/msgpack-c")
                    sys.exit(SKIP)
                raise RuntimeError(f"strata exited ({code}) before listening:\n{self.log}")
            self.log += line
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"strata did not start:\n{self.log}")
        self.port = int(self.url.rsplit(":", 1)[1])
        # keep reading the log so the pipe never fills
        import threading
        threading.Thread(target=self._drain, daemon=True).start()
        self.wait_healthy()

    def _drain(self):
        for line in self.proc.stdout:
            self.log += line

    def wait_healthy(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health") as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.05)
        raise RuntimeError("strata is not healthy:\n" + self.log)

    def post(self, path, body, timeout=60):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return r.read().decode()

    def slots(self):
        return json.loads(self.get("/slots"))

    def tokenize(self, text):
        return self.post("/tokenize", {"content": text})["tokens"]

    def metric(self, name):
        """The first sample of 'name' (no labels) on /metrics; None if absent."""
        for line in self.get("/metrics").splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise RuntimeError("strata did not stop on SIGTERM:\n" + self.log[-4000:])
        return self.proc.returncode


def request_key(parent, tokens):
    """The indexer's own key of one block: chained over [parent, tokens]
    (llm-d uses FNV-64a over CBOR; any hash of the same inputs will do)."""
    h = hashlib.blake2b(digest_size=8)
    h.update(parent.to_bytes(8, "big"))
    h.update(b"".join(t.to_bytes(4, "little") for t in tokens))
    return int.from_bytes(h.digest(), "big") or 1


class Indexer:
    """A SUB socket bound here (pods connect: the centralized mode), or
    connected to 'connect' (a pod that binds: pod discovery), and the view
    per (pod, model)."""

    def __init__(self, block_size=16, connect=None):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"kv@")
        if connect:
            self.sock.connect(connect)
            self.endpoint = connect
        else:
            self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
            self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.block = block_size
        self.seq = {}        # pod -> next sequence number expected
        self.blocks = {}     # (pod, model) -> {engine key: (parent key, tokens, request key)}
        self.by_request = {}  # (pod, model) -> {request key: engine key}
        self.cleared = []    # (pod, model) in the order AllBlocksCleared came
        self.counts = {"BlockStored": 0, "BlockRemoved": 0, "AllBlocksCleared": 0}

    def close(self):
        self.sock.close(0)
        self.ctx.term()

    def poll(self, timeout_ms=50):
        """Reads every message waiting (waiting up to timeout_ms for one)."""
        got = 0
        while self.sock.poll(timeout_ms):
            self.handle(self.sock.recv_multipart())
            got += 1
            timeout_ms = 0
        return got

    def handle(self, frames):
        assert len(frames) == 3, f"{len(frames)} frames"
        topic, seq, payload = frames
        m = re.fullmatch(r"kv@([0-9.]+:[0-9]+)@(.+)", topic.decode())
        assert m, f"topic {topic!r}"
        pod, model = m.group(1), m.group(2)
        assert len(seq) == 8
        n = int.from_bytes(seq, "big")
        assert n == self.seq.get(pod, 0), f"{pod}: sequence {n}, expected {self.seq.get(pod, 0)}"
        self.seq[pod] = n + 1
        batch = msgpack.unpackb(payload, raw=False)
        assert isinstance(batch, list) and len(batch) in (2, 3), batch
        assert isinstance(batch[0], float) and isinstance(batch[1], list)
        for ev in batch[1]:
            self.event(pod, model, ev)

    def event(self, pod, model, ev):
        kind = ev[0]
        self.counts[kind] += 1
        view = self.blocks.setdefault((pod, model), {})
        byreq = self.by_request.setdefault((pod, model), {})
        if kind == "BlockStored":
            assert len(ev) == 7, ev[:1]
            _, keys, parent, tokens, block, lora, medium = ev
            assert block == self.block and lora is None and medium == "GPU"
            assert len(keys) >= 1 and len(tokens) == len(keys) * block, "full blocks only"
            if parent is None:
                parent_req = 0
            else:
                assert parent in view, f"parent {parent} not announced or removed"
                parent_req = view[parent][2]
            prev = parent
            for i, k in enumerate(keys):
                assert k not in view, f"{k} stored twice"
                toks = tokens[i * block:(i + 1) * block]
                rk = request_key(parent_req, toks)
                view[k] = (prev, toks, rk)
                byreq[rk] = k
                prev, parent_req = k, rk
        elif kind == "BlockRemoved":
            assert len(ev) == 3 and ev[2] == "GPU"
            for k in ev[1]:
                assert k in view, f"removing {k}, not present"
                del byreq[view[k][2]]
                del view[k]
            for k, (parent, _, _) in view.items():
                assert parent is None or parent in view, f"{k} left without its parent"
        elif kind == "AllBlocksCleared":
            assert len(ev) == 1
            # Strata removes every block before (llm-d's indexer ignores this event)
            assert not view, f"AllBlocksCleared with {len(view)} blocks still present"
            self.cleared.append((pod, model))
        else:
            raise AssertionError(f"unknown event {kind}")

    def chain(self, pod, model, last):
        """Engine keys from the first block to 'last'."""
        view = self.blocks.get((pod, model), {})
        out = []
        while last is not None:
            assert last in view, f"{last} not present"
            out.append(last)
            last = view[last][0]
        return out[::-1]

    def tokens_of(self, pod, model, last):
        view = self.blocks[(pod, model)]
        return [t for k in self.chain(pod, model, last) for t in view[k][1]]

    def match(self, pod, model, tokens):
        """Full blocks of 'tokens' present on the pod, from the first: what
        the precise prefix scorer counts."""
        byreq = self.by_request.get((pod, model), {})
        parent, n = 0, 0
        for i in range(0, len(tokens) - self.block + 1, self.block):
            rk = request_key(parent, tokens[i:i + self.block])
            if rk not in byreq:
                break
            parent, n = rk, n + 1
        return n

    def settle(self, check, timeout=20):
        """Reads events until check() holds (the publisher sends within
        ~20 ms of a step; the deadline is only there against a hang)."""
        deadline = time.monotonic() + timeout
        err = None
        while time.monotonic() < deadline:
            self.poll(50)
            try:
                check()
                return
            except AssertionError as e:
                err = e
        raise AssertionError(f"the indexer's view did not settle: {err}")


def pod_view_matches(ix, srv, model_of_slot=None):
    """Asserts the indexer's view of srv equals its idle slots' caches:
    each slot's announced chain is present, as long as its full blocks,
    and the present keys are exactly the union of the chains."""
    pod = f"127.0.0.1:{srv.port}"
    want = {}
    for s in srv.slots():
        assert s["state"] == "idle", f"slot {s['id']} busy"
        if s["model"] is None:
            continue
        assert s["kv_blocks"] == s["n_cached"] // ix.block, s
        if s["kv_blocks"] == 0:
            assert s["kv_last_block"] is None
            continue
        chain = ix.chain(pod, s["model"], int(s["kv_last_block"]))
        assert len(chain) == s["kv_blocks"], (len(chain), s)
        want.setdefault(s["model"], set()).update(chain)
    for (p, model), view in ix.blocks.items():
        if p == pod:
            assert set(view) == want.get(model, set()), \
                f"{model}: {len(view)} present, {len(want.get(model, set()))} in the slots"
