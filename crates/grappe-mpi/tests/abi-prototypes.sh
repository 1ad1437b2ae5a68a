#!/usr/bin/env bash
# Checks grappe's mpi.h as a list of functions:
#   - it compiles without a warning as C99 (-pedantic) and as C++;
#   - each function it declares has exactly the prototype MPICH's header gives it (return and
#     parameter types, const included, as gcc -aux-info prints them), except the handle
#     conversions MPICH only has as macros;
#   - each MPI_ function has its PMPI_ twin with the same prototype, and the other way round;
#   - it declares every function Open MPI 4.1's header declares (Open MPI 4.1 implements MPI-3.1),
#     so nothing of MPI-3.1 is missing, and every function the library exports.
#
# Usage: crates/grappe-mpi/tests/abi-prototypes.sh   (needs gcc, g++, mpicc.mpich and
#        mpicc.openmpi: scripts/install-deps installs them)
set -euo pipefail
export LC_ALL=C # sort and join must agree on the order
crate="$(cd "$(dirname "$0")/.." && pwd)"

for tool in gcc g++ mpicc.mpich mpicc.openmpi; do
  command -v "$tool" >/dev/null || { echo "abi-prototypes: $tool not found (run scripts/install-deps)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '#include <mpi.h>\n' >"$work/include.c"

gcc -std=c99 -pedantic -Wall -Wextra -Werror -I"$crate/include" -c "$work/include.c" -o "$work/c.o"
g++ -x c++ -Wall -Wextra -Werror -I"$crate/include" -c "$work/include.c" -o "$work/cxx.o"

# "NAME<TAB>extern RET NAME (TYPES);" for each MPI function a compiler sees through a header.
prototypes() {
  local compiler="$1" include="$2" out="$3"
  "$compiler" ${include:+"$include"} -aux-info "$work/aux" -c "$work/include.c" -o /dev/null
  sed -nE 's@^/\* [^*]* \*/ (extern [^(]*[ *](P?MPI_[A-Za-z0-9_]*|MPIR_Dup_fn) \(.*)$@\2\t\1@p' \
    "$work/aux" | sort -u >"$out"
  if [ ! -s "$out" ]; then
    echo "abi-prototypes: no MPI function found in what $compiler saw of mpi.h (gcc -aux-info)" >&2
    exit 1
  fi
}
prototypes gcc "-I$crate/include" "$work/grappe"
prototypes mpicc.mpich "" "$work/mpich"
prototypes mpicc.openmpi "" "$work/openmpi"

status=0
declared=$(wc -l <"$work/grappe")
# The same function under the same name, with a different prototype, or unknown to MPICH.
join -t $'\t' -a 1 "$work/grappe" "$work/mpich" >"$work/joined"
while IFS=$'\t' read -r name ours theirs; do
  if [ -z "$theirs" ]; then
    # MPICH has the integer-handle conversions only as macros (grappe has both).
    if ! [[ "$name" =~ ^P?MPI_(Comm|Group|Type|Op|Errhandler|Request|Message|Info|Win)_(c2f|f2c)$ ]]; then
      echo "abi-prototypes: $name is declared by grappe's mpi.h, not by MPICH's" >&2
      status=1
    fi
  elif [ "$ours" != "$theirs" ]; then
    printf 'abi-prototypes: %s differs from MPICH:\n  grappe: %s\n  MPICH:  %s\n' "$name" "$ours" "$theirs" >&2
    status=1
  fi
done <"$work/joined"

# MPI_name and PMPI_name pair up with the same prototype.
grep '^MPI_' "$work/grappe" | sed -E 's/^MPI_(\w+)\t(extern [^(]*[ *])MPI_/PMPI_\1\t\2PMPI_/' |
  sort >"$work/expected-pmpi"
grep '^PMPI_' "$work/grappe" | sort >"$work/pmpi"
if ! diff -u "$work/expected-pmpi" "$work/pmpi" >"$work/pmpi.diff"; then
  echo "abi-prototypes: the PMPI_ functions do not mirror the MPI_ ones (- from MPI_, + PMPI_):" >&2
  cat "$work/pmpi.diff" >&2
  status=1
fi

# Nothing Open MPI 4.1 (MPI-3.1) declares is missing.
cut -f1 "$work/grappe" >"$work/grappe-names"
cut -f1 "$work/openmpi" | comm -23 - "$work/grappe-names" >"$work/missing"
if [ -s "$work/missing" ]; then
  echo "abi-prototypes: functions of MPI-3.1 (declared by Open MPI 4.1) missing from grappe's mpi.h:" >&2
  sed 's/^/  /' "$work/missing" >&2
  status=1
fi

# Every function the library exports is declared (a program compiled with grappe's mpicc
# would otherwise not see it).
grep -v '^#' "$crate/abi/functions.txt" | sort -u | comm -23 - "$work/grappe-names" >"$work/undeclared"
if [ -s "$work/undeclared" ]; then
  echo "abi-prototypes: functions the library exports (abi/functions.txt) that mpi.h does not declare:" >&2
  sed 's/^/  /' "$work/undeclared" >&2
  status=1
fi

if [ "$status" -eq 0 ]; then
  echo "abi-prototypes: $declared functions declared (MPI_ and PMPI_), each with MPICH's prototype;" \
    "all $(wc -l <"$work/openmpi") of Open MPI 4.1's are there, and every function the library" \
    "exports; clean as C99 and C++"
fi
exit "$status"
