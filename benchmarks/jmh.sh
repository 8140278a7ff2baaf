#!/usr/bin/env bash
# The JMH benchmarks of the lower layers (verbs post paths, read chains), from one jar.
#   benchmarks/jmh.sh                     every benchmark, JMH's defaults
#   benchmarks/jmh.sh ReadChainBuild -prof gc   one of them, with JMH options
# They run on the provider `auto` picks (the software provider on a machine without an RDMA device);
# the Soft-RoCE guest runs them on rxe0: softroce/guest-tests.sh --bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../bin/jdk.sh
source "$root/bin/jdk.sh"
(cd "$root" && mvn -B -q -DskipTests -pl benchmarks -am package >/dev/null)
exec java --enable-native-access=ALL-UNNAMED -jar "$root/benchmarks/target/benchmarks.jar" "$@" \
  -jvmArgsAppend --enable-native-access=ALL-UNNAMED
