#!/usr/bin/env python3
"""check_deploy.py -- validate deploy/ without a cluster (ctest deploy_manifests).

    check_deploy.py DEPLOY_DIR STRATA_BIN

1. Every YAML file parses (PyYAML, Debian python3-yaml; missing: exit 77, skipped).
2. Schema-level checks per kind: the fields each kind requires, their types and
   allowed values (a small table below, from the API references: apps/v1
   Deployment, v1 Service, inference.networking.k8s.io/v1 InferencePool,
   InferenceObjective, gateway.networking.k8s.io/v1 HTTPRoute, keda.sh/v1alpha1
   ScaledObject, the prometheus-operator's ServiceMonitor, kustomize, the llm-d router's EndpointPickerConfig and its
   file-discovery endpoints file, Envoy's bootstrap).
3. Cross-checks: the pods carry the labels the pool and the Service select and the
   engine type the EPP config maps; one port for the API, /metrics, /health and the
   pool; probes on /health; the drain fits the grace period; one GPU; every strata
   flag in the Deployment is one `strata serve --help` knows.
4. Against a live `strata serve` (sim): every metric the EPP configs and the KEDA
   query name is a typed gauge on /metrics, with the labels they filter on.

Prints one line per problem; exit 1 if any.
"""
import ipaddress
import os
import re
import subprocess
import sys
import time
import urllib.request

try:
    import yaml
except ImportError:
    print("check_deploy: PyYAML missing (Debian: apt-get install python3-yaml); skipped")
    sys.exit(77)

problems = []


def bad(where, msg):
    problems.append(f"{where}: {msg}")


# ---- schema ---------------------------------------------------------------------

# A schema is a dict: key -> (type or nested schema or [item schema], required).
# str | int | bool | dict | list are plain types; "port" is an int 1..65535.
S = lambda t, req=True: (t, req)  # noqa: E731


def check(where, value, schema):
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return bad(where, f"expected a mapping, got {type(value).__name__}")
        for key, (sub, req) in schema.items():
            if key not in value:
                if req:
                    bad(where, f"missing required field '{key}'")
                continue
            check(f"{where}.{key}", value[key], sub)
    elif isinstance(schema, list):
        if not isinstance(value, list) or not value:
            return bad(where, "expected a non-empty list")
        for i, item in enumerate(value):
            check(f"{where}[{i}]", item, schema[0])
    elif isinstance(schema, tuple):  # one of these literal values
        if value not in schema:
            bad(where, f"{value!r} is not one of {schema}")
    elif schema == "port":
        if not isinstance(value, int) or not 1 <= value <= 65535:
            bad(where, f"{value!r} is not a port number")
    elif schema == "quantity":
        if not isinstance(value, (str, int)) or not re.fullmatch(r"\d+(\.\d+)?([EPTGMk]i?|m)?", str(value)):
            bad(where, f"{value!r} is not a resource quantity")
    elif schema is dict or schema is list or schema is str or schema is bool:
        if not isinstance(value, schema):
            bad(where, f"expected {schema.__name__}, got {type(value).__name__}")
    elif schema is int:
        if not isinstance(value, int) or isinstance(value, bool):
            bad(where, f"expected an integer, got {value!r}")


META = {"name": S(str), "labels": S(dict, False), "namespace": S(str, False)}
LABEL_SELECTOR = {"matchLabels": S(dict)}
HTTP_PROBE = {"httpGet": S({"path": S(str), "port": S(str)}), "periodSeconds": S(int, False),
              "failureThreshold": S(int, False)}
CONTAINER = {
    "name": S(str), "image": S(str), "args": S([str]),
    "ports": S([{"name": S(str, False), "containerPort": S("port")}]),
    "startupProbe": S(HTTP_PROBE, False), "readinessProbe": S(HTTP_PROBE), "livenessProbe": S(HTTP_PROBE),
    "lifecycle": S({"preStop": S({"exec": S({"command": S([str])})})}),
    "resources": S({"requests": S(dict), "limits": S(dict)}),
}
POOL_REF = {"group": S(str, False), "kind": S(str, False), "name": S(str)}
KINDS = {
    ("apps/v1", "Deployment"): {
        "metadata": S(META),
        "spec": S({"replicas": S(int, False), "selector": S(LABEL_SELECTOR),
                   "template": S({"metadata": S({"labels": S(dict)}),
                                  "spec": S({"containers": S([CONTAINER]),
                                             "terminationGracePeriodSeconds": S(int),
                                             "volumes": S(list, False)})})}),
    },
    ("v1", "Service"): {
        "metadata": S(META),
        "spec": S({"selector": S(dict), "ports": S([{"name": S(str, False), "port": S("port"),
                                                     "targetPort": S(str), "protocol": S(("TCP",), False)}])}),
    },
    ("inference.networking.k8s.io/v1", "InferencePool"): {
        "metadata": S(META),
        "spec": S({"selector": S(LABEL_SELECTOR), "targetPorts": S([{"number": S("port")}]),
                   "endpointPickerRef": S({"name": S(str), "port": S({"number": S("port")}),
                                           "failureMode": S(("FailOpen", "FailClose"), False)})}),
    },
    ("inference.networking.x-k8s.io/v1alpha2", "InferenceObjective"): {
        "metadata": S(META), "spec": S({"priority": S(int), "poolRef": S(POOL_REF)}),
    },
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): {
        "metadata": S(META),
        "spec": S({"parentRefs": S([{"name": S(str)}]),
                   "rules": S([{"matches": S(list, False), "filters": S(list, False),
                                "backendRefs": S([{"group": S(str), "kind": S(("InferencePool",)),
                                                   "name": S(str)}])}])}),
    },
    ("keda.sh/v1alpha1", "ScaledObject"): {
        "metadata": S(META),
        "spec": S({"scaleTargetRef": S({"name": S(str), "kind": S(str, False)}),
                   "minReplicaCount": S(int, False), "maxReplicaCount": S(int, False),
                   "triggers": S([{"type": S(str), "metadata": S(dict)}])}),
    },
    ("monitoring.coreos.com/v1", "ServiceMonitor"): {
        "metadata": S(META),
        "spec": S({"selector": S(LABEL_SELECTOR),
                   "endpoints": S([{"port": S(str), "path": S(str, False), "interval": S(str, False)}])}),
    },
    ("kustomize.config.k8s.io/v1beta1", "Kustomization"): {"resources": S([str])},
}
EPP_CONFIG = {
    "plugins": S([{"type": S(str), "name": S(str, False), "parameters": S(dict, False)}]),
    "schedulingProfiles": S([{"name": S(str), "plugins": S([{"pluginRef": S(str), "weight": S(int, False)}])}]),
}
ENGINE_CONFIG = {"name": S(str), "queuedRequestsSpec": S(str), "runningRequestsSpec": S(str),
                 "kvUsageSpec": S(str), "loraSpec": S(str, False), "cacheInfoSpec": S(str, False),
                 "cacheBlockSizeLabelName": S(str, False), "cacheNumBlocksLabelName": S(str, False),
                 "customMetrics": S([{"attributeKey": S(str), "metricSpec": S(str),
                                      "optional": S(bool, False)}], False)}


def load_all(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [d for d in yaml.safe_load_all(f) if d is not None]
    except yaml.YAMLError as e:
        bad(path, f"does not parse: {e}")
        return []


# ---- the EPP configs ------------------------------------------------------------

def check_epp_config(where, doc):
    if doc.get("kind") != "EndpointPickerConfig" or not str(doc.get("apiVersion", "")).endswith("/v1alpha1"):
        bad(where, "not an EndpointPickerConfig (apiVersion .../v1alpha1)")
    check(where, doc, EPP_CONFIG)
    names = set()
    for p in doc.get("plugins", []):
        names.add(p.get("name") or p.get("type"))
    for prof in doc.get("schedulingProfiles", []):
        for ref in prof.get("plugins", []):
            if ref.get("pluginRef") not in names:
                bad(where, f"profile {prof.get('name')} names plugin {ref.get('pluginRef')!r}, not declared")
    disc = ((doc.get("dataLayer") or {}).get("discovery") or {}).get("endpoints")
    if disc and disc.get("pluginRef") not in names:
        bad(where, f"dataLayer.discovery names plugin {disc.get('pluginRef')!r}, not declared")
    engines = [e for p in doc.get("plugins", []) if p.get("type") == "core-metrics-extractor"
               for e in (p.get("parameters") or {}).get("engineConfigs", [])]
    strata = [e for e in engines if e.get("name") == "strata"]
    if len(strata) != 1:
        bad(where, "needs exactly one core-metrics-extractor engineConfig named strata")
        return None
    check(f"{where}.engineConfigs[strata]", strata[0], ENGINE_CONFIG)
    return strata[0]


def check_endpoints_file(where, doc):
    check(where, doc, {"endpoints": S([{"name": S(str), "address": S(str), "port": S(str),
                                        "namespace": S(str, False), "labels": S(dict, False)}])})
    seen = set()
    for i, ep in enumerate(doc.get("endpoints", [])):
        w = f"{where}.endpoints[{i}]"
        try:
            ipaddress.IPv4Address(ep.get("address", ""))
        except ValueError:
            bad(w, f"address {ep.get('address')!r} is not a literal IPv4 address")
        if not re.fullmatch(r"\d+", str(ep.get("port", ""))) or not 1 <= int(ep["port"]) <= 65535:
            bad(w, f"port {ep.get('port')!r} is not 1..65535 as a string")
        if (ep.get("labels") or {}).get("llm-d.ai/engine-type") != "strata":
            bad(w, "lacks the label llm-d.ai/engine-type: strata")
        if ep.get("name") in seen:
            bad(w, f"duplicate name {ep.get('name')!r}")
        seen.add(ep.get("name"))


def check_envoy(where, doc):
    text = yaml.safe_dump(doc)
    for need in ("envoy.filters.http.ext_proc", "ORIGINAL_DST", "x-gateway-destination-endpoint",
                 "FULL_DUPLEX_STREAMED"):
        if need not in text:
            bad(where, f"lacks {need}")
    check(where, doc, {"static_resources": S({"listeners": S(list), "clusters": S(list)})})


# ---- the Deployment against the rest ---------------------------------------------

def serve_flags(strata):
    out = subprocess.run([strata, "serve", "--help"], capture_output=True, text=True, timeout=30)
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", out.stdout + out.stderr))


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def check_deployment(where, dep, pool, service, known_flags):
    pod = dep["spec"]["template"]
    labels = pod["metadata"].get("labels", {})
    if labels.get("llm-d.ai/engine-type") != "strata":
        bad(where, "pod template lacks llm-d.ai/engine-type: strata")
    for name, sel in (("Deployment selector", dep["spec"]["selector"].get("matchLabels", {})),
                      ("InferencePool selector", pool["spec"]["selector"].get("matchLabels", {}) if pool else {}),
                      ("Service selector", service["spec"].get("selector", {}) if service else {})):
        for k, v in sel.items():
            if labels.get(k) != v:
                bad(where, f"pod labels do not match the {name} ({k}={v})")
    c = pod["spec"]["containers"][0]
    args = c.get("args", [])
    if args[:1] != ["serve"]:
        bad(where, "the container does not run `strata serve`")
    for a in args:
        flag = a.split("=", 1)[0]
        if flag.startswith("--") and flag not in known_flags:
            bad(where, f"strata serve does not know {flag}")
    port = int(arg_value(args, "--port") or 8080)
    named = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
    if port not in named.values():
        bad(where, f"--port {port} is not a containerPort")
    if pool and pool["spec"]["targetPorts"][0]["number"] != port:
        bad(where, "the InferencePool's target port is not the serving port")
    if service and named.get(service["spec"]["ports"][0]["targetPort"]) != port:
        bad(where, "the Service's targetPort is not the serving port")
    if arg_value(args, "--host") != "0.0.0.0":
        bad(where, "--host 0.0.0.0 is needed to be reached on the pod IP")
    if arg_value(args, "--allowed-hosts") is None:
        bad(where, "--allowed-hosts is needed: Envoy forwards the client's Host header")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        g = (c.get(probe) or {}).get("httpGet")
        if g and (g.get("path") != "/health" or named.get(g.get("port"), g.get("port")) != port):
            bad(where, f"{probe} is not GET /health on the serving port")
    timeout = arg_value(args, "--shutdown-timeout")
    if not timeout or int(timeout) <= 0:
        bad(where, "no --shutdown-timeout: SIGTERM would drop requests in flight")
    cmd = " ".join(c["lifecycle"]["preStop"]["exec"]["command"])
    m = re.search(r"sleep (\d+)", cmd)
    sleep = int(m.group(1)) if m else 0
    grace = pod["spec"]["terminationGracePeriodSeconds"]
    if timeout and grace < sleep + int(timeout):
        bad(where, f"terminationGracePeriodSeconds {grace} < preStop {sleep} s + --shutdown-timeout {timeout} s")
    for kind in ("requests", "limits"):
        if str(c["resources"][kind].get("nvidia.com/gpu")) != "1":
            bad(where, f"resources.{kind} must ask one GPU (nvidia.com/gpu: 1)")
    if arg_value(args, "--backend") == "cuda" and arg_value(args, "--gpus") not in (None, "0"):
        bad(where, "inside the pod its one GPU is device 0 (--gpus 0)")


# ---- metric names against a live scrape ------------------------------------------

def live_metrics(strata):
    proc = subprocess.Popen([strata, "serve", "--host", "127.0.0.1", "--port", "0", "--backend", "sim"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url, deadline, log = None, time.time() + 20, ""
        while url is None and time.time() < deadline:
            line = proc.stdout.readline()
            log += line
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                url = m.group(1).rstrip('"')
        if not url:
            bad("strata serve", f"did not start:\n{log}")
            return ""
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
                    return r.read().decode()
            except OSError:
                time.sleep(0.1)
        bad("strata serve", "no /metrics")
        return ""
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def check_spec(where, spec, scrape, labels_needed=()):
    m = re.fullmatch(r'\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{(.*)\})?\s*', spec)
    if not m:
        return bad(where, f"{spec!r} is not a metric selector")
    name, filt = m.group(1), m.group(3) or ""
    if f"# TYPE {name} gauge\n" not in scrape:
        return bad(where, f"{name} is not a gauge on Strata's /metrics")
    want = dict(re.findall(r'(\w+)\s*=\s*"?([^",]*)"?', filt))
    series = [dict(re.findall(r'(\w+)="([^"]*)"', s or ""))
              for s in re.findall(rf'^{re.escape(name)}(?:\{{(.*)\}})? ', scrape, re.M)]
    if not any(all(s.get(k) == v for k, v in want.items()) for s in series):
        bad(where, f"no {name} series has {want}")
    for lab in labels_needed:
        if not any(lab in s for s in series):
            bad(where, f"{name} has no label {lab}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    root, strata = sys.argv[1], sys.argv[2]
    docs = {}
    for dirpath, dirs, files in os.walk(root):
        # Prometheus rules and Grafana dashboards are not Kubernetes objects:
        # promtool and the deploy e2e test check those (docs/OPERATIONS.md)
        dirs[:] = [d for d in dirs if not (dirpath == root and d in ("prometheus", "grafana"))]
        for f in sorted(files):
            if f.endswith((".yaml", ".yml")):
                path = os.path.join(dirpath, f)
                docs[os.path.relpath(path, root)] = load_all(path)
    if not docs:
        bad(root, "no YAML files")
    by_kind, epp_engines = {}, []
    for rel, ds in docs.items():
        for i, d in enumerate(ds):
            where = f"{rel}#{i}"
            if not isinstance(d, dict):
                bad(where, "not a mapping")
                continue
            key = (d.get("apiVersion"), d.get("kind"))
            if key in KINDS:
                before = len(problems)
                check(where, d, KINDS[key])
                if len(problems) == before:   # cross-checks read only well-formed ones
                    by_kind.setdefault(key[1], []).append((where, d))
            elif d.get("kind") == "EndpointPickerConfig":
                epp_engines.append((where, check_epp_config(where, d)))
            elif "endpoints" in d and rel.startswith("file-discovery"):
                check_endpoints_file(where, d)
            elif "static_resources" in d:
                check_envoy(where, d)
            elif "router" in d:  # Helm values of the router chart
                check(where, d, {"router": S({"modelServers": S({"matchLabels": S(dict)}),
                                               "epp": S({"pluginsConfigFile": S(str)})})})
                if not os.path.exists(os.path.join(root, "epp", d["router"]["epp"]["pluginsConfigFile"])):
                    bad(where, "pluginsConfigFile names no file in deploy/epp/")
            else:
                bad(where, f"unknown document (apiVersion {key[0]!r}, kind {key[1]!r})")
    for kind in ("Deployment", "Service", "InferencePool"):
        if not by_kind.get(kind):
            bad(root, f"no well-formed {kind}")
    if len(epp_engines) < 2:
        bad(root, "expected the EPP config for Kubernetes and the one for file discovery")
    engines = [e for _, e in epp_engines if e]
    if engines and any(e != engines[0] for e in engines):
        bad(root, "the EPP configs map the strata engine differently")
    kust = by_kind.get("Kustomization", [])
    for where, k in kust:
        for res in k.get("resources", []):
            if not os.path.exists(os.path.join(root, os.path.dirname(where.split("#")[0]), res)):
                bad(where, f"resource {res} does not exist")

    pool = (by_kind.get("InferencePool") or [(None, None)])[0][1]
    service = (by_kind.get("Service") or [(None, None)])[0][1]
    known = serve_flags(strata)
    if "--shutdown-timeout" not in known:
        bad(strata, "`strata serve --help` lists no flags")
    for where, dep in by_kind.get("Deployment", []):
        check_deployment(where, dep, pool, service, known)
    for where, sm in by_kind.get("ServiceMonitor", []):
        if service:
            for k, v in sm["spec"]["selector"]["matchLabels"].items():
                if (service["metadata"].get("labels") or {}).get(k) != v:
                    bad(where, f"selects Services labelled {k}={v}; the Strata Service is not")
            if sm["spec"]["endpoints"][0]["port"] not in [p.get("name") for p in service["spec"]["ports"]]:
                bad(where, "scrapes a port the Service does not name")
            if sm["spec"]["endpoints"][0].get("path", "/metrics") != "/metrics":
                bad(where, "scrapes another path than /metrics")
    for where, obj in by_kind.get("InferenceObjective", []):
        if pool and obj["spec"]["poolRef"]["name"] != pool["metadata"]["name"]:
            bad(where, "poolRef names another pool")
    for where, route in by_kind.get("HTTPRoute", []):
        for rule in route["spec"]["rules"]:
            for ref in rule["backendRefs"]:
                if pool and ref["name"] != pool["metadata"]["name"]:
                    bad(where, f"backendRef {ref['name']} is not the pool")

    scrape = live_metrics(strata)
    if scrape:
        for where, e in epp_engines:
            if not e:
                continue
            for key in ("queuedRequestsSpec", "runningRequestsSpec", "kvUsageSpec"):
                check_spec(f"{where}.{key}", e[key], scrape)
            check_spec(f"{where}.loraSpec", e["loraSpec"], scrape,
                       ("max_lora", "running_lora_adapters", "waiting_lora_adapters"))
            check_spec(f"{where}.cacheInfoSpec", e["cacheInfoSpec"], scrape,
                       (e.get("cacheBlockSizeLabelName", "block_size"),
                        e.get("cacheNumBlocksLabelName", "num_gpu_blocks")))
            for cm in e.get("customMetrics", []):
                check_spec(f"{where}.customMetrics", cm["metricSpec"], scrape)
        for where, so in by_kind.get("ScaledObject", []):
            for t in so["spec"]["triggers"]:
                q = t["metadata"].get("query", "")
                for name, filt in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}", q):
                    own = ",".join(kv for kv in filt.split(",") if not kv.strip().startswith(("service", "namespace", "pod")))
                    check_spec(f"{where}.query", f"{name}{{{own}}}", scrape)

    for p in problems:
        print(p)
    print(f"check_deploy: {sum(len(d) for d in docs.values())} documents in {len(docs)} files, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
