//! A directory of per-rank traces is read as one job only if its files
//! are of one job: files of another run, another world size or a rank
//! traced twice are refused with an error naming the file and why.

use std::path::{Path, PathBuf};

use grappe_analysis::TraceSet;
use grappe_analysis::synthetic::{plain_header, write_events};
use grappe_trace::format::FileHeader;
use grappe_trace::{Body, file_for};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grappe-trace-set-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn header(rank: u32, world_size: u32, job: &str) -> FileHeader {
    FileHeader { job: job.into(), ..plain_header(rank, world_size, "node") }
}

fn write(path: &Path, header: &FileHeader) {
    write_events(path, header, &[(10, 10, Body::Init), (20, 20, Body::Finalize)]).unwrap();
}

fn refusal(dir: &Path) -> String {
    match TraceSet::open(dir) {
        Ok(_) => panic!("{} was read as one job", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_files_of_one_job_are_one_set_and_a_missing_rank_is_noted() {
    let dir = scratch("one-job");
    for rank in [0, 2] {
        write(&file_for(&dir, rank), &header(rank, 3, "job-a"));
    }
    let set = TraceSet::open(&dir).unwrap();
    assert_eq!((set.world_size(), set.files().len(), set.missing_ranks()), (3, 2, vec![1]));
    assert_eq!(set.notes(), ["no trace for 1 of 3 ranks (1): their events and messages are absent"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_left_by_another_run_is_refused_with_both_job_ids() {
    let dir = scratch("two-runs");
    write(&file_for(&dir, 0), &header(0, 2, "job-new"));
    write(&file_for(&dir, 1), &header(1, 2, "job-old"));
    let message = refusal(&dir);
    for part in ["rank-00001.gtrace", "\"job-old\"", "\"job-new\"", "rank-00000.gtrace", "two runs"] {
        assert!(message.contains(part), "{part:?} missing from: {message}");
    }
    // A file from before job ids were recorded is another job too.
    write(&file_for(&dir, 1), &header(1, 2, ""));
    assert!(refusal(&dir).contains("no id"), "{}", refusal(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn another_world_size_and_a_rank_traced_twice_are_refused() {
    let dir = scratch("sizes");
    write(&file_for(&dir, 0), &header(0, 2, "job"));
    write(&file_for(&dir, 1), &header(1, 3, "job"));
    let message = refusal(&dir);
    assert!(
        message.contains("rank-00001.gtrace") && message.contains("3-rank job among traces of a 2-rank job"),
        "{message}"
    );

    write(&file_for(&dir, 1), &header(0, 2, "job"));
    let message = refusal(&dir);
    assert!(message.contains("rank 0 is also traced in") && message.contains("rank-00000.gtrace"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}
