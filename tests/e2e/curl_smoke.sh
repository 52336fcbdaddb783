#!/usr/bin/env bash
# curl_smoke.sh STRATA [SOURCE_DIR] -- the README's curl example, and a few
# more curl checks, against `strata serve` on port 0 with the sim engine.
#
# The README's command is taken from README.md itself (the block that
# starts with "curl http://127.0.0.1:8080/v1/chat/completions"), with the
# port swapped for the one the server logged, so the README cannot drift
# from what works.
set -u
bin=${1:?usage: curl_smoke.sh path/to/strata [source dir]}
src=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
pid=
cleanup() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }
check() {   # check NAME CONDITION_EXIT_STATUS DETAIL
    if [ "$2" -eq 0 ]; then pass "$1"; else fail "$1: $3"; fi
}

"$bin" serve --host 127.0.0.1 --port 0 --backend sim --sim-decode-tps 1000 >"$tmp/log" 2>&1 &
pid=$!
port=
for _ in $(seq 1 200); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$tmp/log" | head -1 | sed 's/.*://')
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || { echo "FAIL: no 'listening on' line:"; cat "$tmp/log"; exit 1; }
base="http://127.0.0.1:$port"
for _ in $(seq 1 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = 200 ] && break
    sleep 0.05
done

# 1. the README's example, verbatim but for the port
readme_cmd=$(awk '/^curl http:\/\/127.0.0.1:8080\/v1\/chat\/completions/{on=1} on{print} on&&!/\\$/{exit}' \
             "$src/README.md")
if [ -z "$readme_cmd" ]; then
    fail "README.md has no 'curl http://127.0.0.1:8080/v1/chat/completions' example"
else
    readme_cmd=${readme_cmd//127.0.0.1:8080/127.0.0.1:$port}
    out=$(bash -c "$readme_cmd -sS -w '\n%{http_code}'" 2>&1)
    code=$(tail -n1 <<<"$out")
    body=$(head -n -1 <<<"$out")
    grep -q '"object":"chat.completion"' <<<"$body" && grep -q '"finish_reason":"' <<<"$body"
    ok=$?
    [ "$code" = 200 ] || ok=1
    check "README curl example" "$ok" "HTTP $code: $body"
fi

# 2. streaming with curl -N: data lines, [DONE] last
curl -sS -N "$base/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}' >"$tmp/sse"
[ "$(grep -c '^data: ' "$tmp/sse")" -ge 5 ] && [ "$(grep -v '^$' "$tmp/sse" | tail -n1)" = "data: [DONE]" ]
check "curl -N stream" $? "$(cat "$tmp/sse")"

# 3. x-request-id on every response, errors in the OpenAI shape
hdr=$(curl -sS -D - -o "$tmp/body" "$base/v1/nope")
grep -qi '^x-request-id: req-' <<<"$hdr" && grep -q '^HTTP/1.1 404' <<<"$hdr" &&
    grep -q '"error":{"message":' "$tmp/body"
check "404 with x-request-id" $? "$hdr $(cat "$tmp/body")"
code=$(curl -sS -o "$tmp/body" -w '%{http_code}' "$base/v1/chat/completions" \
       -H 'Content-Type: application/json' -d '{"messages":[]}')
[ "$code" = 400 ] && grep -q '"param":"messages"' "$tmp/body"
check "400 names the param" $? "$code $(cat "$tmp/body")"
# curl -d alone sends a form's Content-Type: not JSON, 415 (docs/SECURITY.md)
code=$(curl -sS -o "$tmp/body" -w '%{http_code}' "$base/v1/chat/completions" -d '{"messages":[]}')
[ "$code" = 415 ] && grep -q '"code":"unsupported_media_type"' "$tmp/body"
check "415 without Content-Type: application/json" $? "$code $(cat "$tmp/body")"

# 4. a browser's CORS preflight: 200, no key needed, a localhost origin allowed (the default)
hdr=$(curl -sS -D - -o /dev/null -X OPTIONS "$base/v1/chat/completions" \
      -H 'Origin: http://localhost:5173' -H 'Access-Control-Request-Method: POST' \
      -H 'Access-Control-Request-Headers: authorization, content-type')
grep -q '^HTTP/1.1 200' <<<"$hdr" &&
    grep -qi '^access-control-allow-origin: http://localhost:5173' <<<"$hdr" &&
    grep -qi '^access-control-allow-headers: authorization, content-type' <<<"$hdr"
check "CORS preflight" $? "$hdr"

# 5. /metrics and /health
curl -sS "$base/metrics" | grep -q '^llamaswap_scheduler_queue_depth{band="batch"} 0$'
check "/metrics bands" $? "no batch queue depth sample"
[ "$(curl -sS "$base/health")" = '{"status":"ok"}' ]
check "/health" $? "not ok"

kill -TERM "$pid"
wait "$pid"
status=$?
pid=
check "SIGTERM -> exit 0" "$status" "exit status $status"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all curl checks passed"
