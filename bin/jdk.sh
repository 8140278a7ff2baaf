# Sourced by the project's scripts: puts a JDK >= 25 first on PATH and in JAVA_HOME.
# Order: $JAVA_HOME if it is >= 25, then /usr/lib/jvm/*, then `java` on PATH.
# shellcheck shell=bash
_rdma_shuffle_java_feature() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p'; }
_rdma_shuffle_find_jdk() {
  local candidate v
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/* /usr/local/lib/jvm/* /opt/jdk* \
      "$(dirname "$(dirname "$(readlink -f "$(command -v java 2>/dev/null || echo /nonexistent)")")")"; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/javac" ] || continue
    v=$(_rdma_shuffle_java_feature "$candidate")
    if [ -n "$v" ] && [ "${v%%.*}" -ge 25 ] 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}
if ! JAVA_HOME=$(_rdma_shuffle_find_jdk); then
  echo "rdma-shuffle needs a JDK 25 or newer (java.lang.foreign) and found none." >&2
  echo "Install one (e.g. Temurin 25) and set JAVA_HOME to it." >&2
  exit 1
fi
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
# Maven 3.8/3.9 uses sun.misc.Unsafe through Guava; JDK 24+ warns about it on every run.
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
command -v mvn >/dev/null || { echo "Maven (mvn) is not on PATH: install Maven 3.8 or newer" >&2; exit 1; }
