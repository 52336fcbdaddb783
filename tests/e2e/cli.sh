#!/usr/bin/env bash
# cli.sh STRATA [SOURCE_DIR] -- the strata binary's command line, from a shell.
#
# Exit statuses and messages of good and bad invocations, the help texts,
# and one start/stop of `strata serve` on port 0 with the simulated engine:
# the "listening on http://HOST:PORT" line, then SIGTERM -> exit 0.
set -u
bin=${1:?usage: cli.sh path/to/strata [source dir]}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }

# run NAME WANT_STATUS ARGS...: runs strata, keeps stdout/stderr in $tmp.
run() {
    local name=$1 want=$2
    shift 2
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    local got=$?
    if [ "$got" -ne "$want" ]; then
        fail "$name: exit status $got, expected $want (stderr: $(head -c 300 "$tmp/err"))"
        return 1
    fi
    pass "$name"
}
# expect FILE TEXT NAME: FILE contains TEXT (fixed string).
expect() {
    grep -qF -- "$2" "$tmp/$1" || fail "$3: $1 lacks '$2': $(head -c 300 "$tmp/$1")"
}
one_line() {
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$1: expected one line on stderr, got: $(cat "$tmp/err")"
}

run "--version" 0 --version && { expect out "strata " "--version"; }
run "--help" 0 --help && { expect out "serve" "--help"; expect out "make-model" "--help"; }
run "no command" 2
run "unknown command" 2 frobnicate && expect err "unknown command 'frobnicate'" "unknown command"
run "serve --bogus" 2 serve --bogus && { expect err "--bogus" "serve --bogus"; one_line "serve --bogus"; }
run "serve --port abc" 2 serve --port abc &&
    { expect err 'strata: --port: expected an integer 0..65535, got "abc"' "--port abc"; one_line "--port abc"; }
run "serve --port 70000" 2 serve --port 70000 && expect err "--port" "--port 70000"
run "serve --rope-scale 1e-50" 2 serve --rope-scale 1e-50 --backend sim --port 0 &&
    expect err "rope_scale 1e-50 is out of range" "serve --rope-scale 1e-50"
run "serve --parallel" 2 serve --parallel && expect err "--parallel: missing value" "--parallel"
run "serve --swap-affinity-bonus 100" 2 serve --swap-affinity-bonus 100 &&
    expect err "expected an integer 0..99" "--swap-affinity-bonus"
run "serve extra argument" 2 serve model.gguf && expect err "unexpected argument 'model.gguf'" "positional"
run "serve -m missing file" 2 serve -m "$tmp/missing.gguf" --port 0 &&
    { expect err "missing.gguf: No such file or directory" "-m missing"; one_line "-m missing"; }
if ! "$bin" --version | grep -q cuda; then
    run "serve --backend cuda (no CUDA build)" 2 serve --backend cuda && expect err "no CUDA backend" "cuda"
fi
run "run without a prompt" 2 run && expect err "usage: strata run" "run"
run "bench without a model" 2 bench && expect err "usage: strata bench" "bench"

# strata run and strata bench take serve's rope flags (docs/CLI.md "Long context").
if run "make-model tiny" 0 make-model "$tmp/tiny.gguf" --preset tiny; then
    m=(-m "$tmp/tiny.gguf")
    run "run --rope-scale 0" 2 run "${m[@]}" -p hi --rope-scale 0 &&
        expect err "usage: strata run" "run --rope-scale 0"
    run "run --rope-scale 1e-50" 2 run "${m[@]}" -p hi --rope-scaling none --rope-scale 1e-50 &&
        expect err "usage: strata run" "run --rope-scale 1e-50"
    run "bench --rope-scale 1e39" 2 bench "${m[@]}" -p 8 -n 4 -r 1 -t 1 --rope-scaling linear \
        --rope-scale 1e39
    run "run --rope-scaling yarn" 0 run "${m[@]}" -p hi -n 2 -t 1 -c 512 --temp 0 \
        --rope-scaling yarn --rope-scale 2 --yarn-orig-ctx 64 &&
        expect err "positions yarn reaches (64 x 2)" "run --rope-scaling yarn"
    run "run --rope-scale without scaling" 1 run "${m[@]}" -p hi -n 2 -t 1 \
        --rope-scaling none --rope-scale 2 &&
        expect err "needs --rope-scaling linear or yarn" "run --rope-scale without scaling"
    run "bench --rope-scaling yarn" 0 bench "${m[@]}" -p 8 -n 4 -r 1 -t 1 \
        --rope-scaling yarn --rope-scale 2 --yarn-orig-ctx 64
    run "bench yarn without a factor" 1 bench "${m[@]}" -p 8 -n 4 -r 1 -t 1 --rope-scaling yarn &&
        expect err "needs a factor" "bench yarn without a factor"
    run "bench --rope-scaling bogus" 2 bench "${m[@]}" --rope-scaling bogus
    # -d: the pp and tg tokens after a context of N positions, llama-bench's test names
    run "bench -d" 0 bench "${m[@]}" -p 8 -n 4 -d 40 -r 1 -t 1 &&
        { expect out "pp8 @ d40" "bench -d"; expect out "tg4 @ d40" "bench -d"; }
    # KV cache types (docs/ENGINE.md "KV cache types"): q8_0 needs a head dim of 32s
    run "run -ctk q8_0 on head dim 16" 1 run "${m[@]}" -p hi -n 2 -t 1 -ctk q8_0 &&
        expect err "multiple of 32" "run -ctk q8_0 on head dim 16"
    run "bench -ctk q4_0" 2 bench "${m[@]}" -ctk q4_0 &&
        expect err 'expected one of f16, q8_0, f32, bf16, got "q4_0"' "bench -ctk q4_0"
    run "serve -ctv q4_0" 2 serve "${m[@]}" -ctv q4_0 &&
        expect err '-ctv: expected one of f16, q8_0, f32, bf16, got "q4_0"' "serve -ctv q4_0"
    # f32 and bf16 take any head dim (cpu backend)
    run "run -ctk bf16 -ctv f32" 0 run "${m[@]}" -p hi -n 2 -t 1 --temp 0 -ctk bf16 -ctv f32
    if run "make-model small" 0 make-model "$tmp/small.gguf" --preset small; then
        run "bench -ctk q8_0" 0 bench -m "$tmp/small.gguf" -p 8 -n 4 -r 1 -t 1 -ctk q8_0 \
            -ctv q8_0 && { expect out "type_k" "bench -ctk q8_0"; expect out "q8_0" "bench -ctk"; }
        run "bench -ctv q8_0 json" 0 bench -m "$tmp/small.gguf" -p 8 -n 0 -r 1 -t 1 -ctv q8_0 \
            -o json && { grep -qE '"type_v":[[:space:]]*"q8_0"' "$tmp/out" ||
            fail "bench -ctv q8_0 json: no \"type_v\": \"q8_0\" in $(head -c 300 "$tmp/out")"; }
        run "bench -ctk f32 -ctv bf16 json" 0 bench -m "$tmp/small.gguf" -p 8 -n 0 -r 1 -t 1 \
            -ctk f32 -ctv bf16 -o json && { grep -qE '"type_k":[[:space:]]*"f32"' "$tmp/out" &&
            grep -qE '"type_v":[[:space:]]*"bf16"' "$tmp/out" ||
            fail "bench -ctk f32 -ctv bf16 json: types not in $(head -c 300 "$tmp/out")"; }
    fi
fi

# Config files: missing, bad (file:line: key), and the example.
run "missing --config" 2 serve --config "$tmp/nope.yaml" && expect err "nope.yaml" "missing --config"
printf 'port: 1\nmodels:\n  - name: a\n    parallel: four\n' >"$tmp/bad.yaml"
run "bad config" 2 serve --config "$tmp/bad.yaml" &&
    expect err 'bad.yaml:4: models[0].parallel: expected an integer 1..1024, got "four"' "bad config"
printf 'prot: 1\n' >"$tmp/typo.yaml"
run "config typo" 2 serve --config "$tmp/typo.yaml" && expect err "did you mean 'port'" "typo"

# Every flag is in serve --help, each with its default.
if run "serve --help" 0 serve --help; then
    for flag in -m --model -a --alias --config --host --port --api-key --body-limit --max-queue \
        --http-threads --priority-order --backend --gpus -np --parallel --batch -c --ctx-size \
        --ubatch -t --threads --batch-mtp --mtp-draft --scheduler --aging-divisor \
        --swap-affinity-bonus --give-way-tokens --yields-max --sim-prompt-tps --sim-decode-tps \
        --sim-load-seconds --sim-tokens --sim-reply --reasoning-format --log-format --log-level \
        --cors-origins --sse-keepalive --responses-store-mb --shutdown-timeout \
        --help; do
        grep -qE -- "(^| )${flag}[ ,]" "$tmp/out" || fail "serve --help lacks $flag"
    done
    n_defaults=$(grep -c ' default: ' "$tmp/out")
    [ "$n_defaults" -ge 30 ] || fail "serve --help: only $n_defaults defaults"
fi

# serve: start on port 0, read the port from the log, stop with SIGTERM.
# start_server LOG ARGS...: sets server_pid and port, or fails.
start_server() {
    local log=$1
    shift
    "$bin" serve --port 0 "$@" >"$log" 2>&1 </dev/null &
    server_pid=$!
    port=
    for _ in $(seq 1 100); do
        if grep -q "listening on http://" "$log"; then
            port=$(grep -m1 "listening on http://" "$log" | sed 's/.*://; s/[^0-9].*//')
            return 0
        fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    fail "serve $*: no 'listening on http://' line: $(head -c 600 "$log")"
    return 1
}
stop_server() {
    local name=$1 log=$2 status
    kill -TERM "$server_pid"
    wait "$server_pid"
    status=$?
    server_pid=
    [ "$status" -eq 0 ] || fail "$name: exit status $status after SIGTERM: $(tail -c 600 "$log")"
    grep -q "stopped" "$log" || fail "$name: no 'stopped' line after SIGTERM"
    [ "$status" -eq 0 ] && pass "$name"
}

if start_server "$tmp/serve.log" --backend sim; then
    [ -n "$port" ] && [ "$port" -gt 0 ] || fail "serve: port '$port' is not a number > 0"
    if command -v curl >/dev/null; then
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")
        case $code in 200|503) pass "serve: /health answers $code" ;; *) fail "serve: /health gave '$code'" ;; esac
    fi
    stop_server "serve --port 0 then SIGTERM" "$tmp/serve.log"
fi
if start_server "$tmp/default.log"; then
    grep -q "no model given: serving the built-in tiny model .* its text is noise" \
        "$tmp/default.log" || fail "serve without a model does not say it serves the noisy tiny model"
    stop_server "serve (no model) then SIGTERM" "$tmp/default.log"
fi
if start_server "$tmp/example.log" --config "$src/configs/strata.example.yaml" --log-format json; then
    grep -q '"msg":"listening on http://127.0.0.1:' "$tmp/example.log" || fail "json log: no listening line"
    stop_server "serve --config example --log-format json then SIGTERM" "$tmp/example.log"
fi

# serve with a bf16 key and an f32 value cache answers a completion.
if [ -f "$tmp/tiny.gguf" ] && command -v curl >/dev/null &&
    start_server "$tmp/kvt.log" -m "$tmp/tiny.gguf" -t 1 -ctk bf16 -ctv f32; then
    for _ in $(seq 1 100); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break
        sleep 0.1
    done
    code=$(curl -s -o "$tmp/out" -w '%{http_code}' "http://127.0.0.1:$port/completion" \
        -H 'Content-Type: application/json' -d '{"prompt":"hi","n_predict":3,"temperature":0}')
    [ "$code" = 200 ] && grep -q '"content"' "$tmp/out" ||
        fail "serve -ctk bf16 -ctv f32: /completion gave $code: $(head -c 300 "$tmp/out")"
    grep -q "k bf16 v f32" "$tmp/kvt.log" || fail "serve -ctk bf16 -ctv f32: no 'k bf16 v f32' in the load log"
    stop_server "serve -ctk bf16 -ctv f32" "$tmp/kvt.log"
fi

# A single -m model that fails its start-up load ends serve (exit 2, the
# reason logged) instead of leaving a server that only answers 503.
# A file that is no model is caught before the port is bound: no
# "listening on" line before the error.
printf 'GGUF-but-not-really' >"$tmp/broken.gguf"
if run "serve -m broken.gguf" 2 serve -m "$tmp/broken.gguf" --port 0 --host 127.0.0.1; then
    expect err "broken.gguf: gguf:" "serve -m broken.gguf"
    ! grep -q "listening on" "$tmp/err" || fail "serve -m broken.gguf: 'listening on' before the error"
fi

# --version names every backend built in; every command's --help exits 0.
run "--version lists cpu" 0 --version && expect out "backends: sim, cpu" "--version lists cpu"
for cmd in serve run bench inspect make-model "bench --mtp" "bench --ngram"; do
    # shellcheck disable=SC2086
    run "$cmd --help" 0 $cmd --help && expect out "usage: strata $cmd" "$cmd --help"
done
if "$bin" --version | grep -q cuda; then
    run "serve --backend cuda without -m" 2 serve --backend cuda --port 0 &&
        expect err "--backend cuda needs a model: add -m FILE.gguf" "cuda without -m"
fi

# A port in use ends serve before the model starts loading.
if start_server "$tmp/holder.log" --backend sim; then
    run "serve on a port in use" 1 serve --port "$port" --host 127.0.0.1 &&
        expect err "cannot start: cannot listen on" "port in use"
    ! grep -q "loading model" "$tmp/err" || fail "port in use: the model loads after 'cannot start'"
    stop_server "serve (holding the port) then SIGTERM" "$tmp/holder.log"
fi

# --kv-events: an endpoint ZeroMQ refuses stops serve at start (exit 2,
# named); a build without libzmq/msgpack-c says what to install instead.
run "serve --kv-events tcp://bad" 2 serve --backend sim --port 0 --host 127.0.0.1 \
        --kv-events tcp://bad &&
    expect err "kv-events" "serve --kv-events tcp://bad"

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all CLI checks passed"
