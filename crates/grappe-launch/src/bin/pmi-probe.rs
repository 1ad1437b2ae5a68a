//! pmi-probe: checks the PMI service of whatever launched it.
//!
//! Every process puts its rank and a maximum-size value, fences, reads back every other
//! process's values and checks them, checks that a missing key and a malformed key are errors,
//! then barriers and finalizes. It exits 1 on any mismatch, 2 if PMI cannot be used at all.
//!
//! ```text
//! grappe run -n 4 pmi-probe        srun -n 4 pmi-probe        mpiexec.mpich -n 4 pmi-probe
//! ```
//!
//! Options, for testing how launchers handle failures (the other processes go on to the
//! barrier, where they wait for the failing one):
//! - `--fail RANK:HOW`: after the fence, the process of PMI rank RANK fails: `sigkill` (kills
//!   itself), `exit3`, `exit0` (exits 0 without PMI finalize), `abort` (PMI abort with code 5,
//!   then waits), or `hang` (never reaches the barrier).
//! - `--shm`: create `/dev/shm/grappe-<job id>-probe-<rank>` and leave it for the launcher.

use grappe_launch::pmi::{Pmi, PmiError, connect_from_env};
use grappe_launch::wire::TextProblem;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Failure {
    SigKill,
    Exit3,
    Exit0,
    Abort,
    Hang,
}

struct Options {
    fail: Option<(usize, Failure)>,
    shm: bool,
}

fn main() {
    let options = match parse_options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("pmi-probe: {message}");
            std::process::exit(2);
        }
    };
    let mut pmi = match connect_from_env() {
        Ok(pmi) => pmi,
        Err(e) => {
            eprintln!("pmi-probe: cannot connect to PMI: {e}");
            std::process::exit(2);
        }
    };
    match probe(pmi.as_mut(), &options) {
        Ok(()) => println!("pmi-probe: rank {} ok", pmi.rank()),
        Err(problems) => {
            for problem in problems {
                eprintln!("pmi-probe: rank {}: {problem}", pmi.rank());
            }
            std::process::exit(1);
        }
    }
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { fail: None, shm: false };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--shm" => options.shm = true,
            "--fail" => {
                let spec = args.next().ok_or("--fail needs RANK:HOW")?;
                options.fail = Some(parse_failure(&spec)?);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

fn parse_failure(spec: &str) -> Result<(usize, Failure), String> {
    let (rank, how) = spec.split_once(':').ok_or(format!("--fail {spec:?}: expected RANK:HOW"))?;
    let rank = rank.parse().map_err(|_| format!("--fail {spec:?}: bad rank"))?;
    let how = match how {
        "sigkill" => Failure::SigKill,
        "exit3" => Failure::Exit3,
        "exit0" => Failure::Exit0,
        "abort" => Failure::Abort,
        "hang" => Failure::Hang,
        _ => {
            return Err(format!("--fail {spec:?}: HOW is sigkill|exit3|exit0|abort|hang"));
        }
    };
    Ok((rank, how))
}

fn probe(pmi: &mut dyn Pmi, options: &Options) -> Result<(), Vec<String>> {
    let (rank, size) = (pmi.rank(), pmi.size());
    let ranks_per_process = grappe_launch::env::ranks_per_process().map_err(one)?;
    println!(
        "pmi-probe: rank {rank} of {size} kind={} job={} pid={} ranks_per_process={ranks_per_process}",
        pmi.kind(),
        pmi.job_id(),
        std::process::id()
    );
    pmi.put(&rank_key(rank), &rank_value(rank)).map_err(one)?;
    put_big_value(pmi, rank).map_err(one)?;
    if options.shm {
        create_shm_file(pmi.job_id(), rank).map_err(one)?;
    }
    let mut problems = check_local_validation(pmi);
    pmi.fence().map_err(one)?;
    if let Some((_, how)) = options.fail.filter(|&(target, _)| target == rank) {
        fail(pmi, how);
    }
    problems.extend((0..size).flat_map(|other| check_values_of(pmi, other)));
    match pmi.get("probe-nobody-put-this") {
        Err(PmiError::KeyNotFound { .. }) => {}
        other => problems.push(format!("get of a missing key gave {other:?}")),
    }
    pmi.barrier().map_err(one)?;
    pmi.finalize().map_err(one)?;
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems),
    }
}

fn one(error: impl std::fmt::Display) -> Vec<String> {
    vec![error.to_string()]
}

fn rank_key(rank: usize) -> String {
    format!("probe-rank-{rank}")
}

fn rank_value(rank: usize) -> String {
    format!("value-of-{rank}")
}

fn big_key(rank: usize) -> String {
    format!("probe-big-{rank}")
}

fn big_length_key(rank: usize) -> String {
    format!("probe-big-length-{rank}")
}

/// `len` bytes that tell which rank wrote them.
fn big_value(rank: usize, len: usize) -> String {
    let letter = char::from(b'a' + (rank % 26) as u8);
    let mut value = format!("{rank}-");
    while value.len() < len {
        value.push(letter);
    }
    value.truncate(len);
    value
}

/// Puts the longest value the PMI accepts under this key: 1023 bytes (the portable maximum), or
/// what the error says fits (PMI-1 limits the whole line), and publishes the length used.
fn put_big_value(pmi: &mut dyn Pmi, rank: usize) -> Result<(), PmiError> {
    let key = big_key(rank);
    let len = match pmi.put(&key, &big_value(rank, 1023)) {
        Ok(()) => 1023,
        Err(PmiError::InvalidValue { problem: TextProblem::TooLong { max, .. }, .. }) => {
            pmi.put(&key, &big_value(rank, max))?;
            max
        }
        Err(e) => return Err(e),
    };
    pmi.put(&big_length_key(rank), &len.to_string())
}

fn check_values_of(pmi: &mut dyn Pmi, other: usize) -> Vec<String> {
    let big_len = match pmi.get(&big_length_key(other)).map(|text| text.parse::<usize>()) {
        Ok(Ok(len)) if len >= 512 => len,
        other_result => return vec![format!("{}: {other_result:?}", big_length_key(other))],
    };
    let mut problems = Vec::new();
    let expected_values = [(rank_key(other), rank_value(other)), (big_key(other), big_value(other, big_len))];
    for (key, expected) in expected_values {
        match pmi.get(&key) {
            Ok(value) if value == expected => {}
            Ok(value) => problems.push(format!(
                "{key}: got {} bytes {:?}..., expected {} bytes",
                value.len(),
                value.chars().take(20).collect::<String>(),
                expected.len()
            )),
            Err(e) => problems.push(format!("{key}: {e}")),
        }
    }
    problems
}

/// Keys and values the wire cannot carry must be refused before anything is sent.
fn check_local_validation(pmi: &mut dyn Pmi) -> Vec<String> {
    let mut problems = Vec::new();
    if !matches!(pmi.put("bad key", "v"), Err(PmiError::InvalidKey { .. })) {
        problems.push("a key with a space was not refused".to_owned());
    }
    if !matches!(pmi.put("k", "a;b"), Err(PmiError::InvalidValue { .. })) {
        problems.push("a value with ';' was not refused".to_owned());
    }
    if !matches!(pmi.put("k", &"x".repeat(1024)), Err(PmiError::InvalidValue { .. })) {
        problems.push("a 1024-byte value was not refused".to_owned());
    }
    problems
}

fn create_shm_file(job_id: &str, rank: usize) -> std::io::Result<()> {
    let path = format!("/dev/shm/grappe-{job_id}-probe-{rank}");
    std::fs::write(&path, b"left for the launcher to remove")?;
    println!("pmi-probe: rank {rank} created {path}");
    Ok(())
}

fn fail(pmi: &mut dyn Pmi, how: Failure) -> ! {
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_millis());
    eprintln!("pmi-probe: rank {} fails ({how:?}) at unix_ms={millis}", pmi.rank());
    match how {
        Failure::SigKill => {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            std::process::exit(99) // Not reached.
        }
        Failure::Exit3 => std::process::exit(3),
        Failure::Exit0 => std::process::exit(0),
        Failure::Abort => {
            if let Err(e) = pmi.abort(5, "pmi-probe was told to abort") {
                eprintln!("pmi-probe: abort failed: {e}");
            }
            sleep_forever()
        }
        Failure::Hang => sleep_forever(),
    }
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
