#!/usr/bin/env bash
# Prints the path of an unpacked rdma-core userspace of another Debian suite, for the Soft-RoCE guest
# to lay over its own (guest-tests.sh --rdma-core VERSION): libibverbs1 and ibverbs-providers of
# that version, and the suite's libc6 because they need its symbols (rdma-core 56 in trixie needs
# glibc 2.38; bookworm has 2.36). Nothing is installed on the host: apt works in a private
# directory under the cache (its own list of the suite, signature-checked with Debian's keyring),
# downloads the three packages, and dpkg-deb unpacks them.
#
#   rdma-core.sh VERSION [SUITE]        e.g. rdma-core.sh 56 (trixie), rdma-core.sh 65 (sid)
# Without SUITE, the first of trixie, forky, sid that carries that version.
set -euo pipefail
version=${1:?usage: rdma-core.sh VERSION [SUITE]}
suites=${2:-trixie forky sid}
cache=${RDMA_SHUFFLE_CACHE:-$HOME/.cache/rdma-shuffle}/softroce/rdma-core-$version
tree=$cache/root
if [[ -f $cache/ready ]]; then
  echo "$tree"
  exit 0
fi
log() { echo "rdma-core.sh: $*" >&2; }
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
full=""
for suite in $suites; do
  mkdir -p "$cache/apt/$suite/lists/partial" "$cache/apt/$suite/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${mirror:-http://deb.debian.org/debian} $suite main" \
    >"$cache/apt/$suite/sources.list"
  apt_opts=(-o Dir::Etc::SourceList="$cache/apt/$suite/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$cache/apt/$suite/lists" -o Dir::Cache="$cache/apt/$suite/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  log "reading $suite's package list"
  apt-get "${apt_opts[@]}" -qq update
  full=$(apt-cache "${apt_opts[@]}" show libibverbs1 | sed -n 's/^Version: //p' | grep "^$version\." | head -1 || true)
  [[ -z $full ]] || break
done
[[ -n $full ]] || { log "none of $suites has libibverbs1 $version.x"; exit 1; }
rm -rf "$cache/debs" "$tree.tmp" && mkdir -p "$cache/debs" "$tree.tmp"
log "downloading libibverbs1 and ibverbs-providers $full and $suite's libc6"
(cd "$cache/debs" && apt-get "${apt_opts[@]}" -qq download "libibverbs1=$full" "ibverbs-providers=$full" libc6 2>&1 |
  grep -v 'Download is performed unsandboxed' >&2 || true)
for p in libibverbs1 ibverbs-providers libc6; do
  deb=$(compgen -G "$cache/debs/${p}_*.deb" | head -1) || { log "download of $p failed"; exit 1; }
  dpkg-deb -x "$deb" "$tree.tmp"
done
rm -rf "$cache/debs" "$tree" && mv "$tree.tmp" "$tree"
echo "$full ($suite)" >"$cache/ready"
echo "$tree"
