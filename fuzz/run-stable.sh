#!/usr/bin/env bash
# Coverage-guided fuzzing of the PMI wire parsers with the stable toolchain (no cargo-fuzz, no
# nightly): the same instrumentation flags cargo-fuzz uses with `--sanitizer none`.
# Usage: fuzz/run-stable.sh [SECONDS]      (default 60; crashes land in fuzz/artifacts/)
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
target="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# --target keeps these flags away from build scripts, which must not be instrumented.
cargo build --release --target "$target" --target-dir target/fuzz --bin pmi_wire
mkdir -p corpus/pmi_wire artifacts/pmi_wire
exec "target/fuzz/$target/release/pmi_wire" corpus/pmi_wire seeds/pmi_wire \
    -artifact_prefix=artifacts/pmi_wire/ -max_len=4096 -max_total_time="$secs"
