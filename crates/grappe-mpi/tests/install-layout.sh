#!/usr/bin/env bash
# Checks scripts/build-mpi's install tree and the mpicc/mpicxx wrappers without building the Rust
# library: a small stand-in MPI library compiled here is installed with GRAPPE_MPI_LIB (into a
# temporary prefix, never target/mpi), then
#   - the tree has both sonames, the -lmpi/-lmpich links, mpi.h and the wrappers;
#   - mpicc -show prints MPICH's form, from which rsmpi's probe takes -I, -L and -l;
#   - programs compiled and linked by mpicc and mpicxx (in one step, and -c then link) load the
#     tree's libmpi.so.12 through their rpath and run;
#   - the tree still works once moved, and through a link to the wrapper;
#   - a binary built by MPICH's mpicc.mpich runs on the tree's libmpich.so.12;
#   - bad input (missing library, not an MPI library, failing cargo build) stops build-mpi with
#     a message naming it.
#
# Usage: crates/grappe-mpi/tests/install-layout.sh   (needs gcc, g++, patchelf and mpicc.mpich:
#        scripts/install-deps installs them)
set -euo pipefail
crate="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$crate/../.." && pwd)"
build_mpi="$root/scripts/build-mpi"

for tool in gcc g++ patchelf readelf mpicc.mpich; do
  command -v "$tool" >/dev/null || { echo "install-layout: $tool not found (run scripts/install-deps)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() {
  echo "install-layout: $*" >&2
  exit 1
}
expect_equal() {
  local what="$1" got="$2" expected="$3"
  [ "$got" = "$expected" ] || fail "$what: got '$got', expected '$expected'"
}

# A stand-in for grappe's library: the five functions hello.c calls, and a version string that
# says which library answered.
cat >"$work/standin.c" <<'EOF'
#include <mpi.h>
#include <string.h>
int MPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; return MPI_SUCCESS; }
int MPI_Finalize(void) { return MPI_SUCCESS; }
int MPI_Comm_rank(MPI_Comm comm, int *rank) { *rank = comm == MPI_COMM_WORLD ? 0 : -1; return MPI_SUCCESS; }
int MPI_Comm_size(MPI_Comm comm, int *size) { *size = comm == MPI_COMM_WORLD ? 1 : -1; return MPI_SUCCESS; }
int MPI_Get_library_version(char *version, int *length)
{
    strcpy(version, "layout stand-in");
    *length = (int)strlen(version);
    return MPI_SUCCESS;
}
EOF
cat >"$work/hello.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length, rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(version, &length);
    printf("rank %d of %d on %s\n", rank, size, version);
    return MPI_Finalize();
}
EOF
cp "$work/hello.c" "$work/hello.cpp"
gcc -shared -fPIC -I"$crate/include" "$work/standin.c" -o "$work/standin.so"
expected_run="rank 0 of 1 on layout stand-in"

# Bad input first: each must fail, naming what is wrong.
refused() {
  local expected="$1" output
  shift
  if output=$("$@" 2>&1); then fail "build-mpi accepted: $* (said: $output)"; fi
  grep -qF "$expected" <<<"$output" || fail "build-mpi's refusal of '$*' does not say '$expected': $output"
}
refused "$work/absent.so (GRAPPE_MPI_LIB) does not exist" \
  env GRAPPE_MPI_LIB="$work/absent.so" "$build_mpi" --no-build --prefix "$work/refused"
refused "$work/hello.c is not an ELF shared library" \
  env GRAPPE_MPI_LIB="$work/hello.c" "$build_mpi" --no-build --prefix "$work/refused"
libm="$(gcc -print-file-name=libm.so.6)"
refused "$libm does not define MPI_Init: it is not an MPI library" \
  env GRAPPE_MPI_LIB="$libm" "$build_mpi" --no-build --prefix "$work/refused"
# A tree whose grappe-mpi crate does not build: build-mpi stops and installs nothing.
mkdir -p "$work/broken/scripts" "$work/broken/crates/grappe-mpi"
cp "$build_mpi" "$work/broken/scripts/build-mpi"
printf '[package]\nname = "grappe-mpi"\nversion = \n' >"$work/broken/crates/grappe-mpi/Cargo.toml"
refused "cargo build -p grappe-mpi failed" "$work/broken/scripts/build-mpi" --prefix "$work/refused"
[ ! -e "$work/refused" ] || fail "build-mpi created $work/refused though it refused to install"

# The tree.
GRAPPE_MPI_LIB="$work/standin.so" "$build_mpi" --no-build --prefix "$work/mpi" >"$work/build.log" ||
  fail "build-mpi failed: $(cat "$work/build.log")"
prefix="$work/mpi"
expect_equal "libmpi.so.12's soname" "$(patchelf --print-soname "$prefix/lib/libmpi.so.12")" libmpi.so.12
expect_equal "libmpich.so.12's soname" "$(patchelf --print-soname "$prefix/lib/libmpich.so.12")" libmpich.so.12
expect_equal "lib/libmpi.so" "$(readlink "$prefix/lib/libmpi.so")" libmpi.so.12
expect_equal "lib/libmpich.so" "$(readlink "$prefix/lib/libmpich.so")" libmpich.so.12
cmp -s "$crate/include/mpi.h" "$prefix/include/mpi.h" || fail "include/mpi.h is not crates/grappe-mpi/include/mpi.h"
for wrapper in mpicc mpicxx; do
  [ -x "$prefix/bin/$wrapper" ] || fail "bin/$wrapper is missing or not executable"
done
# Installing again over the tree replaces it in place.
GRAPPE_MPI_LIB="$work/standin.so" "$build_mpi" --no-build --prefix "$work/mpi" >/dev/null ||
  fail "build-mpi failed over an existing tree"

# -show as MPICH prints it, and as rsmpi's build probe reads it (-I, -L, -l only).
show_and_run() {
  local prefix="$1" via="$2" show words
  show="$("$via/mpicc" -show)"
  expect_equal "mpicc -show" "$show" "cc -I$prefix/include -L$prefix/lib -Wl,-rpath,$prefix/lib -lmpi"
  read -r -a words <<<"$show"
  local includes=() libdirs=() libs=()
  for word in "${words[@]}"; do
    case "$word" in
      -I*) includes+=("${word#-I}") ;;
      -L*) libdirs+=("${word#-L}") ;;
      -l*) libs+=("${word#-l}") ;;
    esac
  done
  expect_equal "rsmpi's include directories" "${includes[*]}" "$prefix/include"
  expect_equal "rsmpi's library directories" "${libdirs[*]}" "$prefix/lib"
  expect_equal "rsmpi's libraries" "${libs[*]}" mpi
  expect_equal "mpicxx -show" "$("$via/mpicxx" -show)" \
    "c++ -I$prefix/include -L$prefix/lib -Wl,-rpath,$prefix/lib -lmpi"
  expect_equal "mpicc -show -c" "$("$via/mpicc" -show -c x.c)" "cc -c x.c -I$prefix/include"

  local out="$work/out"
  rm -rf "$out" && mkdir "$out"
  "$via/mpicc" "$work/hello.c" -o "$out/hello_c"
  "$via/mpicc" -c "$work/hello.c" -o "$out/hello.o"
  "$via/mpicc" "$out/hello.o" -o "$out/hello_linked"
  "$via/mpicxx" "$work/hello.cpp" -o "$out/hello_cxx"
  for program in hello_c hello_linked hello_cxx; do
    expect_equal "$program's library" \
      "$(readelf -d "$out/$program" | sed -n 's/.*(NEEDED).*\[\(libmpi[^]]*\)\]/\1/p')" libmpi.so.12
    readelf -d "$out/$program" | grep -E '\((RPATH|RUNPATH)\)' | grep -qF "[$prefix/lib]" ||
      fail "$program has no rpath to $prefix/lib"
    expect_equal "$program's output" "$(env -u LD_LIBRARY_PATH "$out/$program")" "$expected_run"
  done
}
show_and_run "$prefix" "$prefix/bin"

# Moved, and called through a link from elsewhere: the wrappers follow the tree.
mv "$work/mpi" "$work/moved"
prefix="$work/moved"
show_and_run "$prefix" "$prefix/bin"
mkdir "$work/links"
ln -s "$prefix/bin/mpicc" "$work/links/mpicc"
ln -s "$prefix/bin/mpicxx" "$work/links/mpicxx"
show_and_run "$prefix" "$work/links"

# A binary of MPICH's wrapper asks for libmpich.so.12: the tree's answers.
mpicc.mpich "$work/hello.c" -o "$work/hello_mpich"
expect_equal "the MPICH-built binary's output on the tree" \
  "$(LD_LIBRARY_PATH="$prefix/lib" "$work/hello_mpich")" "$expected_run"

echo "install-layout: build-mpi's tree (both sonames, links, mpi.h, wrappers) checked; mpicc and" \
  "mpicxx -show, compile and link against it, moved and through links; an mpicc.mpich binary runs on" \
  "its libmpich.so.12; bad libraries and a failing build are refused"
