#!/usr/bin/env bash
# Proves grappe's mpi.h against a library built with MPICH's: tests/c/abi_run.c is compiled with
# grappe's header only (as C99 and as C++), linked against Debian's MPICH library (libmpich.so.12)
# and run under MPICH's mpiexec on 2 and 3 ranks. Its checks pass only if every handle, constant,
# status field and prototype it uses means to MPICH's library what it means to the header.
#
# Usage: crates/grappe-mpi/tests/abi-mpich-run.sh   (needs gcc, g++, mpicc.mpich and
#        mpiexec.mpich: scripts/install-deps installs them)
set -euo pipefail
crate="$(cd "$(dirname "$0")/.." && pwd)"
program="$crate/tests/c/abi_run.c"

for tool in gcc g++ mpicc.mpich mpiexec.mpich; do
  command -v "$tool" >/dev/null || { echo "abi-mpich-run: $tool not found (run scripts/install-deps)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# MPICH's library directory and name, as its own wrapper links them (-L... -lmpich).
link=()
for word in $(mpicc.mpich -link_info); do
  case "$word" in -L* | -l*) link+=("$word") ;; esac
done

# The header the program sees must be grappe's, not one on the compiler's default path.
if ! gcc -I"$crate/include" -M "$program" | grep -q "$crate/include/mpi.h"; then
  echo "abi-mpich-run: $program does not include $crate/include/mpi.h" >&2
  exit 1
fi
gcc -std=c99 -pedantic -Wall -Wextra -Werror -I"$crate/include" "$program" "${link[@]}" -o "$work/abi_run_c"
g++ -x c++ -Wall -Wextra -Werror -I"$crate/include" "$program" "${link[@]}" -o "$work/abi_run_cxx"

run() {
  local ranks="$1" binary="$2" output
  if ! output=$(timeout 120 mpiexec.mpich -n "$ranks" "$binary" 2>&1); then
    echo "abi-mpich-run: $(basename "$binary") failed on $ranks ranks of MPICH:" >&2
    echo "$output" >&2
    exit 1
  fi
  if ! grep -q "^abi_run: [0-9]* checks passed on $ranks ranks$" <<<"$output"; then
    echo "abi-mpich-run: $(basename "$binary") on $ranks ranks did not report its checks:" >&2
    echo "$output" >&2
    exit 1
  fi
  echo "abi-mpich-run: $(basename "$binary") (grappe's mpi.h, MPICH's library): $output"
}
run 2 "$work/abi_run_c"
run 3 "$work/abi_run_c"
run 2 "$work/abi_run_cxx"
