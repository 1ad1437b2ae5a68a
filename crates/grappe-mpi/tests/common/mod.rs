//! What the tests of the installed library share: the library, built and
//! installed once for all of them, the repository and the launcher.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use grappe_testkit::{describe, target_dir};
use nix::fcntl::{Flock, FlockArg};

/// The installed library's prefix, up to date with the sources
/// (`scripts/build-mpi --debug` into `target/mpi-debug`, a second when it
/// is up to date), under a file lock that the test processes share.
pub fn installed() -> PathBuf {
    let prefix = target_dir().join("mpi-debug");
    let file = File::create(target_dir().join("mpi-debug.lock")).expect("the lock file");
    let _lock = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e).expect("the install lock");
    let script = root().join("scripts/build-mpi");
    let output =
        Command::new("bash").arg(&script).args(["--debug", "--prefix"]).arg(&prefix).output().expect("build-mpi runs");
    assert!(output.status.success(), "scripts/build-mpi --debug failed:\n{}", describe(&output));
    prefix
}

/// The repository.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// grappe's launcher.
pub fn grappe() -> PathBuf {
    grappe_testkit::built("grappe", "cargo build -p grappe-cli")
}
