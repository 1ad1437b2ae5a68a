//! The collectives in process and hybrid modes (the proptests run them on
//! thread ranks), and 64 ranks on this 2-core machine in every mode:
//! barrier, allreduce and alltoall loops must complete.

mod util;

use std::process::Command;
use std::time::Duration;

fn collectives_pass(args: &[&str], ranks: usize, loops: usize) {
    let mut cmd = Command::new(util::grappe());
    cmd.arg("run").args(args).arg(util::example("collectives_check")).arg(loops.to_string());
    let output = util::run_bounded(cmd, Duration::from_secs(180));
    assert!(output.status.success(), "grappe run {args:?}: {}", util::describe(&output));
    let expected = format!("collectives passed on {ranks} ranks ({loops} loops)");
    assert!(String::from_utf8_lossy(&output.stdout).contains(&expected), "{}", util::describe(&output));
}

#[test]
fn every_collective_on_five_processes() {
    collectives_pass(&["-n", "5"], 5, 20);
}

#[test]
fn every_collective_on_three_processes_of_two_thread_ranks() {
    collectives_pass(&["-n", "6", "--threads-per-process", "2"], 6, 20);
}

#[test]
fn sixty_four_processes_on_two_cores() {
    collectives_pass(&["-n", "64"], 64, 200);
}

#[test]
fn sixty_four_ranks_as_four_processes_of_sixteen_threads() {
    collectives_pass(&["-n", "64", "--threads-per-process", "16"], 64, 200);
}

#[test]
fn sixty_four_thread_ranks_on_two_cores() {
    collectives_pass(&["-n", "64", "--threads"], 64, 200);
}
