//! Slurm's host list and task counts reach `grappe run` from the
//! environment (`SLURM_JOB_NODELIST`, `SLURM_TASKS_PER_NODE`): any text must
//! give hosts or an error that says what is wrong, never a panic, and never
//! more hosts than the bound.
#![no_main]

use grappe_launch::hosts::slurm::{expand_counts, expand_host_list};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match expand_host_list(text) {
        Ok(hosts) => {
            assert!(!hosts.is_empty() && hosts.len() <= 1 << 20, "{text:?} gave {} hosts", hosts.len());
            assert!(hosts.iter().all(|h| !h.is_empty() && !h.contains(['[', ']', ','])), "{text:?}: {hosts:?}");
        }
        Err(e) => assert!(!e.is_empty(), "an empty error for {text:?}"),
    }
    match expand_counts(text) {
        Ok(counts) => assert!(counts.iter().all(|&c| c > 0) && counts.len() <= 1 << 20),
        Err(e) => assert!(!e.is_empty(), "an empty error for {text:?}"),
    }
});
