#!/usr/bin/env bash
# package.sh BUILD_DIR -- the Debian package: built with `cpack -G DEB` from
# BUILD_DIR, its control data and files checked (dpkg-deb -I / -c),
# installed into a fresh root, and `strata serve` run from that root with
# the packaged config, answering /health.
#
# The fresh root: as root, `dpkg --root` with the maintainer scripts run
# outside a chroot (--force-script-chrootless, $DPKG_ROOT set), so postinst
# really makes the 'strata' user in the root's /etc/passwd; otherwise the
# files are unpacked with `dpkg -x` and the postinst is not run.
# Exit 77 (skipped) without dpkg-deb or cpack.
set -u
build=${1:?usage: package.sh BUILD_DIR}
build=$(cd "$build" && pwd)
for tool in dpkg-deb cpack curl; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
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

# ---- build ---------------------------------------------------------------
if ! cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1; then
    cat "$tmp/cpack.log"
    echo "FAIL: cpack -G DEB"
    exit 1
fi
deb=$(ls "$tmp"/out/strata_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { cat "$tmp/cpack.log"; echo "FAIL: cpack made no strata_*.deb"; exit 1; }
pass "cpack -G DEB: $(basename "$deb")"

# ---- control data ----------------------------------------------------------
dpkg-deb -I "$deb" >"$tmp/info" || fail "dpkg-deb -I"
for want in "Package: strata" "Architecture: " "Depends: " "libmicrohttpd" "libcjson" "libyaml" \
    "passwd" " postinst " " prerm " " postrm " " conffiles "; do
    grep -qF -- "$want" "$tmp/info" || fail "dpkg-deb -I lacks '$want'"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles 2>/dev/null | grep -qx /etc/strata/strata.yaml ||
    fail "conffiles does not list /etc/strata/strata.yaml"
pass "control data"

# ---- files -------------------------------------------------------------------
dpkg-deb -c "$deb" >"$tmp/list" || fail "dpkg-deb -c"
for want in ./usr/bin/strata ./lib/systemd/system/strata.service ./etc/strata/strata.yaml \
    ./usr/share/man/man1/strata.1.gz ./usr/share/doc/strata/copyright \
    ./usr/share/doc/strata/GUIDE.md ./usr/share/doc/strata/examples/strata.example.yaml; do
    grep -q -- " $want\$" "$tmp/list" || fail "the package lacks $want"
done
grep -q -- "-rwxr-xr-x root/root .* ./usr/bin/strata$" "$tmp/list" || fail "/usr/bin/strata: not 0755 root"
pass "file list"

# ---- install into a fresh root ----------------------------------------------
root="$tmp/root"
if [ "$(id -u)" -eq 0 ] && command -v dpkg >/dev/null && command -v useradd >/dev/null; then
    mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/etc"
    : >"$root/var/lib/dpkg/status"
    : >"$root/var/lib/dpkg/available"
    printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
    printf 'root:x:0:\n' >"$root/etc/group"
    printf 'root:*:19000:0:99999:7:::\n' >"$root/etc/shadow"
    printf 'root:*::\n' >"$root/etc/gshadow"
    chmod 640 "$root/etc/shadow" "$root/etc/gshadow"
    if dpkg --root="$root" --force-script-chrootless --force-depends --log=/dev/null \
        -i "$deb" >"$tmp/dpkg.log" 2>&1; then
        pass "dpkg --root -i"
        grep -q '^strata:x:[0-9]*:[0-9]*:.*:/var/lib/strata:/usr/sbin/nologin$' "$root/etc/passwd" ||
            fail "postinst did not add the system user strata: $(cat "$root/etc/passwd")"
        grep -q '^strata:' "$root/etc/group" || fail "postinst did not add the group strata"
        [ -d "$root/var/lib/strata" ] || fail "postinst did not make /var/lib/strata"
        grep -q '^Status: install ok installed' "$root/var/lib/dpkg/status" ||
            fail "dpkg does not record strata as installed"
        # and out again: purge removes the files and the state directory
        cp -a "$root" "$tmp/root-purge"
        if dpkg --root="$tmp/root-purge" --force-script-chrootless --log=/dev/null \
            --purge strata >"$tmp/purge.log" 2>&1; then
            [ ! -e "$tmp/root-purge/usr/bin/strata" ] || fail "purge left /usr/bin/strata"
            [ ! -e "$tmp/root-purge/var/lib/strata" ] || fail "purge left /var/lib/strata"
            [ ! -e "$tmp/root-purge/etc/strata/strata.yaml" ] || fail "purge left the config"
            pass "dpkg --purge"
        else
            fail "dpkg --purge: $(cat "$tmp/purge.log")"
        fi
    else
        fail "dpkg --root -i: $(cat "$tmp/dpkg.log")"
    fi
else
    dpkg-deb -x "$deb" "$root" || fail "dpkg-deb -x"
    pass "dpkg-deb -x (not root: the postinst is not run)"
fi

# ---- what was installed ---------------------------------------------------------
unit="$root/lib/systemd/system/strata.service"
for want in "User=strata" "ExecStart=/usr/bin/strata serve --config /etc/strata/strata.yaml" \
    "WantedBy=multi-user.target" "RestartPreventExitStatus=2"; do
    grep -qxF -- "$want" "$unit" || fail "strata.service lacks '$want'"
done
if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify "$unit" 2>&1 | grep -v "Failed to resolve\|not executable\|No such file" |
        grep -i "unknown\|invalid\|bad" && fail "systemd-analyze verify strata.service"
fi
zcat "$root/usr/share/man/man1/strata.1.gz" | grep -q '^\.TH STRATA 1\|^\.TH STRATA "1"' ||
    fail "strata.1.gz has no .TH header"
zcat "$root/usr/share/man/man1/strata.1.gz" | grep -q -- '--reasoning-budget' ||
    fail "strata.1.gz lacks serve's flags"
"$root/usr/bin/strata" --version | grep -q '^strata ' || fail "installed strata --version"

# ---- serve from the installed tree, with the packaged config --------------------
log="$tmp/serve.log"
HOME="$tmp/home" "$root/usr/bin/strata" serve --config "$root/etc/strata/strata.yaml" \
    --port 0 >"$log" 2>&1 </dev/null &
server_pid=$!
port=
for _ in $(seq 1 300); do
    port=$(grep -m1 -o 'listening on http://127.0.0.1:[0-9]*' "$log" | sed 's/.*://')
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ]; then
    fail "installed strata serve: no 'listening on' line: $(cat "$log")"
else
    code=
    for _ in $(seq 1 300); do
        code=$(curl -s -o "$tmp/health" -w '%{http_code}' "http://127.0.0.1:$port/health")
        [ "$code" = 200 ] && break
        sleep 0.1
    done
    [ "$code" = 200 ] && pass "installed strata serve: /health 200" ||
        fail "installed strata serve: /health gave $code: $(cat "$tmp/health")"
    code=$(curl -s -o "$tmp/chat" -w '%{http_code}' "http://127.0.0.1:$port/v1/chat/completions" \
        -H 'Content-Type: application/json' \
        -d '{"model":"any","messages":[{"role":"user","content":"hi"}],"max_tokens":2}')
    [ "$code" = 200 ] || fail "installed strata serve: chat gave $code: $(cat "$tmp/chat")"
    kill -TERM "$server_pid"
    wait "$server_pid" || fail "installed strata serve: exit status $? after SIGTERM"
    server_pid=
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "the package builds, installs and serves"
