#!/usr/bin/env bash
# Coverage-guided fuzzing with the stable toolchain (no cargo-fuzz, no nightly): the same
# instrumentation flags cargo-fuzz uses with `--sanitizer none`.
# Usage: fuzz/run-stable.sh [TARGET] [SECONDS]   (pmi_wire, 60 s by default; crashes land in
# fuzz/artifacts/TARGET/). Targets: pmi_wire, shared_records, trace_reader, checkpoint_wire, sim_spec,
# tcp_frames, agent_channel, slurm_hosts.
set -euo pipefail
cd "$(dirname "$0")"
fuzz_target=pmi_wire
case "${1:-}" in [a-z]*) fuzz_target="$1"; shift ;; esac
secs="${1:-60}"
target="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# --target keeps these flags away from build scripts, which must not be instrumented.
cargo build --release --target "$target" --target-dir target/fuzz --bin "$fuzz_target"
mkdir -p "corpus/$fuzz_target" "artifacts/$fuzz_target" "seeds/$fuzz_target"
max_len=8192
# A trace block of 4 KiB or more is read straight into its buffer, past the reader's own:
# a path only long inputs reach (seeds/trace_reader/large-block.gtrace holds one of 40 KB).
if [ "$fuzz_target" = trace_reader ]; then max_len=65536; fi
exec "target/fuzz/$target/release/$fuzz_target" "corpus/$fuzz_target" "seeds/$fuzz_target" \
    -artifact_prefix="artifacts/$fuzz_target/" -max_len="$max_len" -max_total_time="$secs"
