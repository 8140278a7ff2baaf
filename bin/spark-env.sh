# Sourced by the scripts that run Spark jobs from the Maven build (bin/shuffle-job, benchmarks/*.sh):
# finds JDK 25, builds the benchmarks module, and sets
#   BENCHMARKS_CLASSPATH  the module's classes and dependencies
#   SPARK_JVM_OPTIONS     what spark-submit gives every Spark JVM on Java 17+ (Spark's
#                         JavaModuleOptions; the root pom's spark.moduleOptions has the same list)
#   SPARK_HOME            an empty Spark home: workers launch executors from it, the jobs ship their classpath
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=jdk.sh
source "$root/bin/jdk.sh"
echo "building (mvn install -DskipTests) ..." >&2
# RDMA_SHUFFLE_BUILD_PLUGIN=1: also the shaded plugin jar (the cluster bed ships it as users do).
shade_skip=-Dshade.skip=true
[ "${RDMA_SHUFFLE_BUILD_PLUGIN:-0}" = 1 ] && shade_skip=
if ! (cd "$root" && mvn -B -q -DskipTests $shade_skip -pl benchmarks -am install >"$root/.build.log" 2>&1); then
  tail -40 "$root/.build.log" >&2
  echo "the build failed (whole log: $root/.build.log)" >&2
  exit 1
fi
(cd "$root" && mvn -B -q -pl benchmarks dependency:build-classpath -Dmdep.outputFile="$root/benchmarks/target/classpath.txt" >/dev/null)
BENCHMARKS_CLASSPATH="$root/benchmarks/target/classes:$(cat "$root/benchmarks/target/classpath.txt")"
SPARK_JVM_OPTIONS="--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow -XX:+IgnoreUnrecognizedVMOptions"
for p in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util java.util.concurrent \
         java.util.concurrent.atomic jdk.internal.ref sun.nio.ch sun.nio.cs sun.util.calendar; do
  SPARK_JVM_OPTIONS+=" --add-opens=java.base/$p=ALL-UNNAMED"
done
SPARK_JVM_OPTIONS+=" -Djdk.reflect.useDirectMethodHandle=false -Dio.netty.tryReflectionSetAccessible=true"
export SPARK_HOME="$root/benchmarks/target/spark-home"
export SPARK_LOCAL_IP=127.0.0.1
mkdir -p "$SPARK_HOME/jars" && touch "$SPARK_HOME/RELEASE"
