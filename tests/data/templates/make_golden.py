#!/usr/bin/env python3
"""Writes expected.json: every template here (*.jinja) rendered with every
conversation of conversations.json by Python's jinja2 in Hugging Face's
environment (../jinja/hf_env.py), strftime_now fixed at NOW (UTC). A
conversation a template rejects (raise_exception, a type error) is
recorded as an error. tests/unit/test_jinja_golden.c renders the same
with Strata's interpreter and compares byte for byte.
Run: python3 tests/data/templates/make_golden.py (needs python3-jinja2)."""
import glob
import json
import os
import sys
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jinja"))
from hf_env import env  # noqa: E402

NOW = 1767225600 + 86400 * 45 + 3600 * 9  # 2026-02-15 09:00 UTC
BOS, EOS = "<s>", "</s>"


def context(conv):
    ctx = {"messages": conv["messages"], "bos_token": BOS, "eos_token": EOS,
           "add_generation_prompt": conv["add_generation_prompt"]}
    for key in ("tools", "enable_thinking"):
        if key in conv:
            ctx[key] = conv[key]
    return ctx


def main():
    e = env()
    e.globals["strftime_now"] = lambda fmt: datetime.fromtimestamp(NOW, timezone.utc).strftime(fmt)
    convs = json.load(open(os.path.join(HERE, "conversations.json"), encoding="utf-8"))
    out = {"now": NOW, "bos_token": BOS, "eos_token": EOS, "renders": {}}
    for path in sorted(glob.glob(os.path.join(HERE, "*.jinja"))):
        name = os.path.basename(path)[:-len(".jinja")]
        tmpl = e.from_string(open(path, encoding="utf-8").read())
        out["renders"][name] = {}
        for conv in convs:
            try:
                r = tmpl.render(**context(conv))
            except Exception as ex:  # noqa: BLE001 -- a rejection is an expected outcome
                r = {"error": type(ex).__name__ + ": " + str(ex)[:200]}
            out["renders"][name][conv["name"]] = r
    with open(os.path.join(HERE, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
