#!/usr/bin/env bash
# deploy_rules.sh SOURCE_DIR -- promtool on deploy/ (docs/OPERATIONS.md
# "Alerts"): the alert rules check and pass their unit tests on recorded
# series (deploy/prometheus/strata-rules.test.yml), and every query of the
# Grafana dashboard parses as PromQL (each one, Grafana's $__ macros and
# variables filled in, as a recording rule that promtool checks).
# Exit 77 (skipped) without promtool (Debian's prometheus package,
# scripts/deps.sh --test) or python3.
set -euo pipefail
src=${1:?usage: deploy_rules.sh SOURCE_DIR}
for tool in promtool python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "SKIP: $tool not found (scripts/deps.sh --test installs it)" >&2
        exit 77
    fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

promtool check rules "$src/deploy/prometheus/strata-rules.yml"
(cd "$src/deploy/prometheus" && promtool test rules strata-rules.test.yml)

python3 - "$src/deploy/grafana/strata.json" "$tmp/grafana-rules.yml" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
panels = []
for p in d["panels"]:
    panels.append(p)
    panels.extend(p.get("panels", []))
exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
if not exprs:
    sys.exit("no queries in the dashboard")
with open(sys.argv[2], "w") as f:
    f.write("groups:\n  - name: grafana\n    rules:\n")
    for i, e in enumerate(exprs):
        e = (e.replace("$__rate_interval", "1m").replace("$__interval", "1m")
              .replace("$__range", "1h").replace("$instance", ".*"))
        f.write("      - record: grafana:q%d\n        expr: %s\n" % (i, json.dumps(e)))
print("%d dashboard queries" % len(exprs))
PY
promtool check rules "$tmp/grafana-rules.yml"
