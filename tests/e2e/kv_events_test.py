#!/usr/bin/env python3
"""kv_events_test.py -- the KV events against an indexer's view
(docs/KV-EVENTS.md; issue 21).

`strata serve --backend sim --batch --parallel 2` with two sim models
(alpha, loaded at start; beta, loaded by a swap) publishes to a SUB socket
this test binds (--kv-events tcp://127.0.0.1:PORT: the centralized mode).
A run of requests:

  1  40 words                        slot 0: 44 tokens, 2 blocks stored
  2  the same 40 + 30 more           reuses the 2 blocks; 2 more stored, parent = block 1
  3  50 other words                  the empty slot 1: 3 blocks
  4  60 other words                  no slot empty: the least recently freed (0) is
                                     reused, its 4 blocks removed
  5  4's first 16 words + 80 others  shares one block with slot 0 but goes to slot 1
                                     (too small a share to take slot 0): the block is
                                     copied over (docs/KV-EVENTS.md "Reuse in blocks")
  6  model beta                      a swap: every alpha block removed, then
                                     AllBlocksCleared for alpha; beta's under its topic

After each request the indexer's view (engine key -> parent, tokens)
must equal the slots' caches (/slots: kv_blocks, kv_last_block, n_cached),
and each request must have reused at least the full blocks the indexer
matched for its prompt before it was sent (usage cached_tokens), which is
the promise the precise prefix scorer relies on. A second server checks
the bind mode (tcp://*:PORT, the indexer dials the pod); a third, two
engines whose slots share blocks (one pod-wide count per block).
"""
import os
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import kvindex  # noqa: E402

kvindex.skip_without_modules()

CONFIG = """# written by tests/e2e/kv_events_test.py
batch: true
parallel: 2
models:
  - name: alpha
    preload: true
  - name: beta
"""
B = 16


def words(prefix, n):
    return " ".join(f"{prefix}{i}" for i in range(n))


def run_requests():
    ix = kvindex.Indexer(B)
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "models.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        srv = kvindex.Strata(["--config", cfg, "--sim-decode-tps", "1000",
                              "--sim-prompt-tps", "100000", "--kv-events", ix.endpoint])
    pod = f"127.0.0.1:{srv.port}"
    try:
        def send(model, prompt, expect_match=None):
            ix.settle(lambda: kvindex.pod_view_matches(ix, srv))
            toks = srv.post("/tokenize", {"model": model, "content": prompt})["tokens"]
            k = ix.match(pod, model, toks)
            if expect_match is not None:
                assert k == expect_match, f"indexer matched {k} blocks, expected {expect_match}"
            r = srv.post("/v1/completions", {"model": model, "prompt": prompt, "max_tokens": 5})
            cached = r["usage"]["prompt_tokens_details"]["cached_tokens"]
            assert r["usage"]["prompt_tokens"] == len(toks)
            assert cached >= min(k * B, len(toks) - 1), \
                f"{k} blocks matched, only {cached} tokens reused"
            ix.settle(lambda: kvindex.pod_view_matches(ix, srv))
            return cached

        send("alpha", words("a", 40), expect_match=0)
        assert ix.counts["BlockStored"] == 1
        assert send("alpha", words("a", 40) + " " + words("b", 30), expect_match=2) == 40
        send("alpha", words("c", 50), expect_match=0)
        removed = ix.counts["BlockRemoved"]
        send("alpha", words("d", 60), expect_match=0)
        assert ix.counts["BlockRemoved"] == removed + 1, "slot 0's blocks were not removed"
        slots = srv.slots()
        assert [s["kv_blocks"] for s in slots] == [4, 3], slots
        # one block shared with slot 0, which is not worth taking: copied into slot 1
        assert send("alpha", words("d", 16) + " " + words("e", 80), expect_match=1) >= B
        # the swap
        send("beta", words("f", 40), expect_match=0)
        assert ix.cleared == [(pod, "alpha")], ix.cleared
        assert not ix.blocks[(pod, "alpha")]
        assert len(ix.blocks[(pod, "beta")]) == 2
        assert all(s["model"] == "beta" for s in srv.slots())
        print(f"ok: {ix.counts}, {ix.seq[pod]} messages")
    finally:
        code = srv.stop()
        ix.close()
    assert code == 0, srv.log[-2000:]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def bind_mode():
    """tcp://*:PORT: Strata binds, the indexer dials it (pod discovery).
    The events wait for the first subscriber, so none is lost to the
    connection's set-up."""
    port = free_port()
    srv = kvindex.Strata(["--sim-decode-tps", "1000", "--kv-events", f"tcp://*:{port}",
                          "--kv-events-host", "127.0.0.1", "--kv-block-size", "8"])
    try:
        srv.post("/v1/completions", {"prompt": words("g", 20), "max_tokens": 2})
        ix = kvindex.Indexer(8, connect=f"tcp://127.0.0.1:{port}")
        ix.settle(lambda: kvindex.pod_view_matches(ix, srv))
        assert ix.counts["BlockStored"] == 1 and ix.seq[f"127.0.0.1:{srv.port}"] == 1
        slots = srv.slots()
        assert slots[0]["kv_blocks"] == 2, slots   # 21 tokens in the KV, blocks of 8
        ix.close()
        print("ok: bind mode")
    finally:
        code = srv.stop()
    assert code == 0, srv.log[-2000:]


def two_engines():
    """Two sim engines (--gpus 0,1) of two slots, six requests at a time
    sharing a 48-word prefix: its 3 blocks may sit in four slots on both
    engines, and are announced once and removed only with their last
    holder (the indexer's checks hold whichever slots the requests get);
    the view matches the slots after each round."""
    ix = kvindex.Indexer(B)
    srv = kvindex.Strata(["--gpus", "0,1", "--batch", "--parallel", "2", "--sim-decode-tps",
                          "1000", "--sim-prompt-tps", "100000", "--kv-events", ix.endpoint])
    try:
        def go(prompt):
            srv.post("/v1/completions", {"prompt": prompt, "max_tokens": 3})
        for rnd in range(3):
            ts = [threading.Thread(target=go, args=(words("s", 48) + " " +
                                                    words(f"x{rnd}{k}", 20 + k),))
                  for k in range(6)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            ix.settle(lambda: kvindex.pod_view_matches(ix, srv))
        ix.close()
        print(f"ok: two engines, {ix.counts}")
    finally:
        code = srv.stop()
    assert code == 0, srv.log[-2000:]


if __name__ == "__main__":
    run_requests()
    bind_mode()
    two_engines()
