#!/usr/bin/env bash
# The engine's fetch benchmark: this engine (software provider) vs Spark's NettyBlockTransferService,
# fetching the same file segments from another JVM, alternated in one run. See docs/benchmarks.md.
#   benchmarks/fetch-benchmark.sh [--rounds N] [--csv FILE] [--heap-by-layer] [--batch K] [--variant k=v,...] [2000x256k 50000x4k ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../bin/spark-env.sh
source "$here/../bin/spark-env.sh"
data=$(mktemp -d "${TMPDIR:-/tmp}/rdma-shuffle-fetch-bench.XXXXXX")
trap 'rm -rf "$data"' EXIT
java -Xmx2g $SPARK_JVM_OPTIONS -cp "$BENCHMARKS_CLASSPATH" org.rdmashuffle.benchmarks.engine.FetchBenchmark --dir "$data" "$@"
