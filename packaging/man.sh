#!/bin/sh
# man.sh STRATA OUT -- the strata(1) man page, made from the binary's own
# --help texts at build time, so it cannot drift from them: help2man when it
# is installed (from `strata --help` and `--version`), else written here; in
# both, one section per command holds that command's --help as printed.
# OUT is gzipped (-9n: reproducible).
set -eu
bin=${1:?usage: man.sh path/to/strata OUT}
out=${2:?usage: man.sh path/to/strata OUT}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# roff-safe preformatted text: backslashes, and lines starting with . or '
verbatim() {
    printf '.nf\n'
    sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
    printf '.fi\n'
}

{
    printf '[DESCRIPTION]\n'
    printf 'Strata is a single-binary, OpenAI-compatible LLM inference server with its own engine.\n'
    printf '.B strata serve\n'
    printf 'answers the OpenAI (chat completions, completions, responses, embeddings) and Anthropic\n'
    printf '(messages) APIs on one port; every request carries a priority that orders the queue.\n'
    printf 'Without a model it serves a tiny built-in model whose text is noise.\n'
    for cmd in serve run bench "bench --mtp" "bench --ngram" make-model inspect; do
        printf '.SS "strata %s"\n' "$cmd"
        # shellcheck disable=SC2086
        "$bin" $cmd --help | verbatim
    done
    printf '[FILES]\n'
    printf '.TP\n.I /etc/strata/strata.yaml\nthe config file strata.service runs with\n'
    printf '.TP\n.I /usr/share/doc/strata/\nthe guide (GUIDE.md), the command line (CLI.md), the API (API.md), example configs\n'
    printf '[EXIT STATUS]\n'
    printf '0 done (serve: a graceful stop on SIGINT or SIGTERM); 1 a failure at run time;\n'
    printf '2 a usage or configuration error.\n'
    printf '[SEE ALSO]\n'
    printf 'The guide: /usr/share/doc/strata/GUIDE.md; the service: systemctl status strata.\n'
} >"$tmp/extra.h2m"

name="OpenAI-compatible LLM inference server"
if command -v help2man >/dev/null 2>&1; then
    help2man --no-info --section 1 --name "$name" --include "$tmp/extra.h2m" \
        --output "$tmp/strata.1" "$bin"
else
    version=$("$bin" --version | awk '{print $2}')
    {
        printf '.TH STRATA 1 "" "strata %s" "User Commands"\n' "$version"
        printf '.SH NAME\nstrata \\- %s\n' "$name"
        printf '.SH SYNOPSIS\n.B strata\n\\fIcommand\\fR [\\fIflags\\fR]\n'
        printf '.SH COMMANDS\n'
        "$bin" --help | verbatim
        # the include file's [SECTION] headers become .SH
        sed -e 's/^\[\(.*\)\]$/.SH \1/' "$tmp/extra.h2m"
    } >"$tmp/strata.1"
fi
gzip -9n <"$tmp/strata.1" >"$out"
