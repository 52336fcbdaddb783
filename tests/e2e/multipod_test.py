#!/usr/bin/env python3
"""multipod_test.py -- three Strata pods steered by the signals llm-d's
router reads (docs/KV-EVENTS.md "Verified here"; issue 21).

Three `strata serve --backend sim` pods publish KV events to one
subscriber (the centralized mode) and are scored by a test-only picker
that does what the EPP's default scorers do, with the default Helm
weights (queue-scorer 2, kv-cache-utilization-scorer 2,
prefix-cache-scorer 3):

  queue   min-max over the pods of vllm:num_requests_waiting: the
          shortest queue 1, the longest 0 (all equal: 1)
  kv      1 - vllm:kv_cache_usage_perc
  prefix  full blocks of the prompt the indexer holds for the pod, from
          the first, over the prompt's blocks (precise mode: the prompt's
          token ids from /tokenize, as the EPP gets them from /render)

The highest total wins; ties go to the first pod. What it shows:

  1  a prompt that shares 4 blocks with what pod 1 served goes to pod 1
     (and pod 1 then reuses those tokens);
  2  pod 0 made busy (one request decoding at one token per second and
     three waiting behind it, --parallel 1): new work with no prefix
     anywhere goes elsewhere, and so does work whose prefix pod 1 holds;
  3  a prompt pod 0 holds the prefix of, offered while its queue is long:
     the queue wins over a one-block prefix match (weights 2 + 2 vs 3).

Nothing depends on how fast the machine is: pod 0's blocker needs 1000
s of sim decode time, the other pods answer whenever they do, and the
picker only reads state the test waited for.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import kvindex  # noqa: E402

kvindex.skip_without_modules()

B = 16
WEIGHTS = {"queue": 2.0, "kv": 2.0, "prefix": 3.0}


def words(prefix, n):
    return " ".join(f"{prefix}{i}" for i in range(n))


class Picker:
    def __init__(self, pods, ix):
        self.pods = pods
        self.ix = ix

    def scores(self, prompt):
        waiting = [p.metric("vllm:num_requests_waiting") for p in self.pods]
        kv = [p.metric("vllm:kv_cache_usage_perc") for p in self.pods]
        assert None not in waiting and None not in kv, "a pod lacks the vLLM gauges"
        lo, hi = min(waiting), max(waiting)
        out = []
        for i, p in enumerate(self.pods):
            toks = p.tokenize(prompt)
            n_blocks = len(toks) // B
            matched = self.ix.match(f"127.0.0.1:{p.port}", "default", toks)
            s = {
                "queue": 1.0 if hi == lo else (hi - waiting[i]) / (hi - lo),
                "kv": 1.0 - kv[i],
                "prefix": matched / n_blocks if n_blocks else 0.0,
            }
            s["total"] = sum(WEIGHTS[k] * s[k] for k in WEIGHTS)
            out.append(s)
        return out

    def pick(self, prompt):
        s = self.scores(prompt)
        best = max(range(len(s)), key=lambda i: (s[i]["total"], -i))
        return best, s


def settle_all(ix, pods):
    for p in pods:
        ix.settle(lambda p=p: kvindex.pod_view_matches(ix, p))


def main():
    ix = kvindex.Indexer(B)
    common = ["--sim-prompt-tps", "100000", "--kv-events", ix.endpoint, "--batch",
              "--parallel", "1"]
    pods = []
    try:
        pods.append(kvindex.Strata(common + ["--sim-decode-tps", "1"]))      # pod 0: slow
        pods.append(kvindex.Strata(common + ["--sim-decode-tps", "1000"]))
        pods.append(kvindex.Strata(common + ["--sim-decode-tps", "1000"]))
        picker = Picker(pods, ix)
        complete = lambda i, prompt: pods[i].post(  # noqa: E731
            "/v1/completions", {"prompt": prompt, "max_tokens": 2})

        # 1: the prefix steers
        shared = words("sys", 64)
        complete(1, shared + " " + words("q", 10))
        settle_all(ix, pods)
        i, s = picker.pick(shared + " " + words("r", 20))
        assert i == 1, f"picked pod {i}: {s}"
        assert s[1]["prefix"] > 0 and s[0]["prefix"] == s[2]["prefix"] == 0, s
        r = complete(i, shared + " " + words("r", 20))
        assert r["usage"]["prompt_tokens_details"]["cached_tokens"] >= 64, r["usage"]
        print("ok: the shared prefix went to the pod holding it")

        # pod 0 holds a prefix too, before it gets busy
        complete(0, words("z", 32) + " tail")
        settle_all(ix, pods)

        # 2: pod 0 gets a long queue (one slot decoding slowly, three waiting)
        def hold(prompt):
            try:
                pods[0].post("/v1/completions", {"prompt": prompt, "max_tokens": 1000,
                                                  "ignore_eos": True}, timeout=600)
            except Exception:
                pass   # ended by the shutdown
        for k in range(4):
            threading.Thread(target=hold, args=(words(f"b{k}x", 8),), daemon=True).start()
        deadline = time.monotonic() + 60
        while (pods[0].metric("vllm:num_requests_waiting") != 3 or
               pods[0].metric("vllm:num_requests_running") != 1):
            assert time.monotonic() < deadline, "pod 0 never showed 1 running + 3 waiting"
            time.sleep(0.05)
        i, s = picker.pick(words("fresh", 40))
        assert i != 0, f"picked the busy pod: {s}"
        assert s[0]["queue"] == 0 and s[1]["queue"] == s[2]["queue"] == 1, s
        assert s[0]["kv"] < 1, s
        i, s = picker.pick(shared + " " + words("t", 30))
        assert i == 1, f"picked pod {i}: {s}"
        print("ok: the long queue sent new work elsewhere")

        # 3: pod 0's one-block prefix does not outweigh its queue
        i, s = picker.pick(words("z", 16) + " " + words("u", 40))
        assert s[0]["prefix"] > 0, s
        assert i != 0, f"picked the busy pod: {s}"
        print("ok: the queue outweighed a small prefix")
    finally:
        codes = [p.stop() for p in pods]
        ix.close()
    assert codes == [0] * len(pods), codes


if __name__ == "__main__":
    main()
