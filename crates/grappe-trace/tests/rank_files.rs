//! `remove_rank_files`: before a rerun into the same directory, only the
//! per-rank files of the earlier run go; an unusable directory is an
//! error naming it.

use grappe_trace::{file_for, remove_rank_files};

#[test]
fn only_per_rank_files_are_removed_and_a_bad_directory_is_named() {
    let scratch = grappe_testkit::scratch("rank-files");
    let dir = scratch.join("traces");
    assert_eq!(remove_rank_files(&dir).unwrap(), 0, "a directory not made yet holds nothing");

    std::fs::create_dir_all(&dir).unwrap();
    for rank in [0, 1, 7] {
        std::fs::write(file_for(&dir, rank), b"old").unwrap();
    }
    let others = ["merged.gtrace", "rank-1.gtrace", "rank-00002.gtrace.bak", "notes.txt"];
    for name in others {
        std::fs::write(dir.join(name), b"keep").unwrap();
    }
    assert_eq!(remove_rank_files(&dir).unwrap(), 3);
    let mut left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    let mut expected = others.map(String::from).to_vec();
    expected.sort();
    assert_eq!(left, expected);

    let file = dir.join("notes.txt");
    let error = remove_rank_files(&file).unwrap_err().to_string();
    assert!(error.contains(&file.display().to_string()), "{error}");
}
