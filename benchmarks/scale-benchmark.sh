#!/usr/bin/env bash
# How a serving engine's JVM grows with its peers (issue 18): one serving engine here, fetching peers
# in child JVMs, on the software provider. See docs/benchmarks.md.
#   benchmarks/scale-benchmark.sh [--peers 10,100,400] [--jvms 4]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../bin/spark-env.sh
source "$here/../bin/spark-env.sh"
java -Xmx2g $SPARK_JVM_OPTIONS -cp "$BENCHMARKS_CLASSPATH" org.rdmashuffle.benchmarks.scale.PeerScaleBenchmark "$@"
