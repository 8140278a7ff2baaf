#!/usr/bin/env bash
# How a serving engine's JVM grows with its peers (issue 18): one serving engine here, fetching peers
# in child JVMs, on the software provider. See docs/benchmarks.md. Builds what it needs first.
#   benchmarks/scale-benchmark.sh [--peers 10,100,400] [--jvms 4]
#   --peers N,N,...  one round per count of fetching peers (default 10,100,400)
#   --jvms J         the child JVMs a round's peers spread over (default 4)
#   -h, --help       this text
# Exit status: 0 when it ran, 2 for a usage error (nothing built), else 1.
set -euo pipefail
me=benchmarks/scale-benchmark.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../bin/args.sh
source "$here/../bin/args.sh"
args=("$@")
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --peers) need "$@"; [[ $2 =~ ^[0-9]{1,9}(,[0-9]{1,9})*$ && ! $2 =~ (^|,)0+(,|$) ]] \
        || refuse "--peers takes counts of at least 1 such as 10,100,400, not '$2'"; shift 2 ;;
    --jvms) need "$@"; number "$1" "$2" 1; shift 2 ;;
    *) refuse "unknown argument '$1'" ;;
  esac
done
set -- "${args[@]}"
# shellcheck source=../bin/spark-env.sh
source "$here/../bin/spark-env.sh"
java -Xmx2g $SPARK_JVM_OPTIONS -cp "$BENCHMARKS_CLASSPATH" org.rdmashuffle.benchmarks.scale.PeerScaleBenchmark "$@"
