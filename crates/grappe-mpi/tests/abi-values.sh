#!/usr/bin/env bash
# Checks that grappe's mpi.h gives every predefined handle and constant MPICH's value and C type:
# tests/c/abi_values.c is built against grappe's header and against MPICH's (mpicc.mpich), the
# two outputs must be identical, and every constant grappe's header defines must be in the list
# abi_values.c prints (so a constant added to the header without a check fails here).
#
# Usage: crates/grappe-mpi/tests/abi-values.sh   (needs gcc and MPICH's mpicc.mpich:
#        scripts/install-deps installs them)
set -euo pipefail
crate="$(cd "$(dirname "$0")/.." && pwd)"
header="$crate/include/mpi.h"
program="$crate/tests/c/abi_values.c"

for tool in gcc mpicc.mpich; do
  command -v "$tool" >/dev/null || { echo "abi-values: $tool not found (run scripts/install-deps)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Every object-like MPI_ macro of the header, but the version numbers, must be printed.
missing=0
while read -r name; do
  case "$name" in MPI_VERSION | MPI_SUBVERSION) continue ;; esac
  if ! grep -q "($name)" "$program"; then
    echo "abi-values: $name is defined in $header but abi_values.c does not print it" >&2
    missing=1
  fi
done < <(sed -n 's/^#define \(MPI_[A-Za-z0-9_]*\)[[:space:]].*/\1/p' "$header")
# And every object the header declares for the library to define.
while read -r name; do
  if ! grep -q "OBJECT($name)" "$program"; then
    echo "abi-values: $name is declared in $header but abi_values.c does not print it" >&2
    missing=1
  fi
done < <(sed -n 's/^extern .*[ *]\(MPI_[A-Za-z0-9_]*\);$/\1/p' "$header")
[ "$missing" -eq 0 ] || exit 1

flags=(-std=c11 -Wall -Wextra -pedantic)
gcc "${flags[@]}" -Werror -I"$crate/include" "$program" -o "$work/with-grappe"
mpicc.mpich "${flags[@]}" "$program" -o "$work/with-mpich"
"$work/with-grappe" >"$work/grappe.txt"
"$work/with-mpich" >"$work/mpich.txt"
if ! diff -u "$work/mpich.txt" "$work/grappe.txt" >"$work/diff.txt"; then
  echo "abi-values: grappe's mpi.h differs from MPICH's (- MPICH, + grappe):" >&2
  cat "$work/diff.txt" >&2
  exit 1
fi
echo "abi-values: $(wc -l <"$work/grappe.txt") values, types and layouts identical to MPICH's mpi.h"
