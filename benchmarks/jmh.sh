#!/usr/bin/env bash
# The JMH benchmarks of the lower layers (verbs post paths, read chains), from one jar.
#   benchmarks/jmh.sh                            every benchmark, JMH's defaults
#   benchmarks/jmh.sh ReadChainBuild -prof gc    one of them, with JMH options
#   benchmarks/jmh.sh -h | --help                this text
# Every argument goes to JMH: benchmark name patterns, and JMH's options with one dash, e.g. -f 1,
# -wi 3, -i 5, -prof gc, -p NAME=VALUE, -rf json -rff FILE, -l (list). An option JMH does not have is
# refused here, before the build (JMH's own help: java -jar benchmarks/target/benchmarks.jar -h).
# They run on the provider `auto` picks (the software provider on a machine without an RDMA device);
# the Soft-RoCE guest runs them on rxe0: softroce/guest-tests.sh --bench.
# Exit status: JMH's; 2 for a usage error (nothing built).
set -euo pipefail
me=benchmarks/jmh.sh
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../bin/args.sh
source "$root/bin/args.sh"
# JMH 1.37's options (its CommandLineOptions): these take no value ...
jmh_flags=" h l lp lprof lrf "
# ... and these one.
jmh_options=" bm bs e f foe gc i jvm jvmArgs jvmArgsAppend jvmArgsPrepend o opi p prof r rf rff si t tg to tu v w wbs wf wi wm wmb "
args=("$@")
while (($#)); do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -*)
      name=${1#-}; name=${name#-}; name=${name%%=*}
      if [[ $jmh_flags == *" $name "* ]]; then
        shift
      elif [[ $jmh_options == *" $name "* ]]; then
        # The value may begin with a dash (-jvmArgs -Xmx1g), so it is skipped, not read as an option.
        [[ $1 == *=* ]] && shift || { need "$@"; shift 2; }
      elif [[ ${#1} -gt 2 && $1 != --* && " f i r t w e o p v " == *" ${1:1:1} "* ]]; then
        shift # a one-letter option with its value attached: -f1, -i5
      else
        refuse "unknown option '$1', not one of JMH's"
      fi ;;
    *) shift ;;
  esac
done
set -- "${args[@]}"
# shellcheck source=../bin/jdk.sh
source "$root/bin/jdk.sh"
(cd "$root" && mvn -B -q -DskipTests -pl benchmarks -am package >/dev/null)
exec java --enable-native-access=ALL-UNNAMED -jar "$root/benchmarks/target/benchmarks.jar" "$@" \
  -jvmArgsAppend --enable-native-access=ALL-UNNAMED
