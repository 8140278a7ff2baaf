# Sourced by the project's commands (bin/*, benchmarks/*.sh) to read their arguments before anything
# is built or started: --help prints the command's header comment and exits 0; a bad argument is one
# line on stderr naming it, and exit status 2. Set `me` (the command's name) before sourcing.
# shellcheck shell=bash

# The comment block at the top of the running script (after the #! line), without the '# '.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# Refuses the command line in one line and exits 2.
refuse() { echo "$me: $* ($me --help for usage)" >&2; exit 2; }

# `need "$@"` in an option's branch: the option has a value after it.
need() { (($# >= 2)) || refuse "$1 needs a value"; }

# number OPTION VALUE MIN [MAX]: VALUE is a whole number in MIN..MAX (MAX default: Java's int), else refused.
number() {
  local option=$1 value=$2 min=$3 max=${4:-2147483647} n
  [[ $value =~ ^-?[0-9]+$ ]] || refuse "$option takes a whole number, not '$value'"
  ((${#value} <= 11)) || refuse "$option must be at most $max, not $value"
  n=$((10#${value#-}))
  [[ $value == -* ]] && n=$((-n))
  if ((n < min || n > max)); then
    if ((max == 2147483647)); then
      ((n < min)) && refuse "$option must be at least $min, not $value"
      refuse "$option must be at most $max, not $value"
    fi
    refuse "$option must be $min..$max, not $value"
  fi
}

# rate OPTION VALUE: a link rate as tc takes it (25gbit, 500mbit, 1gibit, 100mbps), else refused.
rate() {
  [[ $2 =~ ^[0-9]+(\.[0-9]+)?([kKmMgGtT][iI]?)?([bB][iI][tT]|[bB][pP][sS])$ ]] \
    || refuse "$1 takes a rate such as 25gbit or 500mbit, not '$2'"
}
