#!/usr/bin/env bash
# The engine's fetch benchmark: this engine (software provider) vs Spark's NettyBlockTransferService,
# fetching the same file segments from another JVM, alternated in one run. See docs/benchmarks.md.
#   benchmarks/fetch-benchmark.sh [--rounds N] [--csv FILE] [2000x256k 50000x4k ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=../bin/jdk.sh
source "$root/bin/jdk.sh"
cd "$root"
mvn -B -q -DskipTests -pl benchmarks -am install >/dev/null
mvn -B -q -pl benchmarks dependency:build-classpath -Dmdep.outputFile="$root/benchmarks/target/classpath.txt" >/dev/null
data=$(mktemp -d "${TMPDIR:-/tmp}/rdma-shuffle-fetch-bench.XXXXXX")
trap 'rm -rf "$data"' EXIT
java -Xmx2g --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
  -cp "$root/benchmarks/target/classes:$(cat "$root/benchmarks/target/classpath.txt")" \
  org.rdmashuffle.benchmarks.engine.FetchBenchmark --dir "$data" "$@"
