#!/usr/bin/env bash
# How a serving engine's JVM grows with its peers (issues 18, 52): one serving engine here, fetching
# peers in child JVMs, on the software provider. See docs/benchmarks.md. Builds what it needs first.
#   benchmarks/scale-benchmark.sh [--peers 10,100,400] [--jvms 4]
#   --peers N,N,...  one round per count of fetching peers (default 10,100,400), after an unreported
#                    warm-up round of 20
#   --jvms J         the child JVMs a round's peers spread over (default 4), each on a loopback
#                    address of its own (127.1.0.1, ...; at most 62,500); a peer engine costs its JVM
#                    about 7 threads, 9 file descriptors and 1.5 MiB
#   -h, --help       this text
# The serving JVM runs with Native Memory Tracking; its open-file limit is raised to 65,536 where
# the hard limit allows (as root), as a serving JVM of 10,000 peers holds 2 sockets per peer.
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
    --jvms) need "$@"; number "$1" "$2" 1 62500; shift 2 ;;
    *) refuse "unknown argument '$1'" ;;
  esac
done
set -- "${args[@]}"
# shellcheck source=../bin/spark-env.sh
source "$here/../bin/spark-env.sh"
# Two sockets per peer (control plane, software link): raise the soft limit to the hard one, and the
# hard one where we may (root), so that 10,000 peers fit; say what it is.
ulimit -Hn 65536 2>/dev/null || true
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "open-file limit: $(ulimit -n)" >&2
java -Xmx2g -XX:NativeMemoryTracking=summary $SPARK_JVM_OPTIONS -cp "$BENCHMARKS_CLASSPATH" org.rdmashuffle.benchmarks.scale.PeerScaleBenchmark "$@"
