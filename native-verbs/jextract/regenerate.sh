#!/usr/bin/env bash
# Regenerates the libibverbs layouts in src/main/java/org/rdmashuffle/verbs/ffi from the system's
# infiniband/verbs.h. Needs `jextract` (JDK 22+ jextract, https://github.com/openjdk/jextract) on
# PATH and rdma-core's headers (Debian: libibverbs-dev). The output is committed; rerun this after
# changing verbs.includes and check the diff, then run the layout test (VerbsLayoutTest).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../src/main/java"
header=${VERBS_HEADER:-/usr/include/infiniband/verbs.h}
command -v jextract >/dev/null || { echo "jextract is not on PATH" >&2; exit 1; }
[ -f "$header" ] || { echo "$header not found: install rdma-core's headers (Debian: libibverbs-dev)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# No --library: the generated classes carry layouts and constants only and must load on machines
# without libibverbs (the software provider uses the same work-request layouts).
grep -v '^#' "$here/verbs.includes" | xargs jextract \
    --output "$tmp" \
    --target-package org.rdmashuffle.verbs.ffi \
    --header-class-name Verbs \
    "$header"
rm -rf "$out/org/rdmashuffle/verbs/ffi"
mkdir -p "$out/org/rdmashuffle/verbs"
mv "$tmp/org/rdmashuffle/verbs/ffi" "$out/org/rdmashuffle/verbs/ffi"
echo "generated: $(find "$out/org/rdmashuffle/verbs/ffi" -name '*.java' | wc -l) files from $header ($(dpkg-query -W -f='${Package} ${Version}' libibverbs-dev 2>/dev/null || echo 'rdma-core headers'))"
