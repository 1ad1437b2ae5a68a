//! Client tests: flavour selection, validation, and the PMI-2 client against a scripted server.

use super::*;
use crate::wire::{WireMessage, pmi2 as wire2, simple as wire1};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;

fn select(vars: &[(&'static str, &str)]) -> Result<PmiKind, crate::env::BadEnv> {
    let vars: HashMap<&str, String> = vars.iter().map(|(k, v)| (*k, v.to_string())).collect();
    select_kind(|name| Ok(vars.get(name).cloned()))
}

#[test]
fn flavour_follows_the_launcher() {
    assert_eq!(select(&[]).unwrap(), PmiKind::Singleton);
    assert_eq!(select(&[("PMI_FD", "5")]).unwrap(), PmiKind::Simple1);
    let slurm = [("PMI_FD", "5"), ("SLURM_JOB_ID", "7"), ("SLURM_STEP_ID", "0")];
    assert_eq!(select(&slurm).unwrap(), PmiKind::Pmi2);
    assert_eq!(select(&[("PMI_FD", "5"), ("PMI_JOBID", "7.0")]).unwrap(), PmiKind::Pmi2);
    // grappe run inside a Slurm allocation passes the Slurm variables on, but serves PMI-1.
    let nested = [("PMI_FD", "5"), ("SLURM_JOB_ID", "7"), ("GRAPPE_LAUNCHER", "grappe")];
    assert_eq!(select(&nested).unwrap(), PmiKind::Simple1);
}

#[test]
fn grappe_pmi_overrides_detection_and_rejects_garbage() {
    let slurm = [("PMI_FD", "5"), ("SLURM_JOB_ID", "7"), ("GRAPPE_PMI", "1")];
    assert_eq!(select(&slurm).unwrap(), PmiKind::Simple1);
    assert_eq!(select(&[("PMI_FD", "5"), ("GRAPPE_PMI", "2")]).unwrap(), PmiKind::Pmi2);
    let forced = [("PMI_FD", "5"), ("GRAPPE_PMI", "singleton")];
    assert_eq!(select(&forced).unwrap(), PmiKind::Singleton);

    let err = select(&[("PMI_FD", "5"), ("GRAPPE_PMI", "3")]).unwrap_err().to_string();
    assert!(err.contains("GRAPPE_PMI") && err.contains("\"3\""), "{err}");
    let err = select(&[("GRAPPE_PMI", "2")]).unwrap_err().to_string();
    assert!(err.contains("needs PMI_FD"), "{err}");
}

#[test]
fn keys_and_values_that_would_corrupt_the_wire_are_refused() {
    let limits = Limits::PORTABLE;
    assert!(limits.check_key("addr-3").is_ok());
    assert!(limits.check_value("k", &"v".repeat(1023)).is_ok());
    for key in ["", "a b", "a=b", "a;b", "a\nb", &"k".repeat(64)] {
        let err = limits.check_key(key).unwrap_err();
        assert!(matches!(err, PmiError::InvalidKey { .. }), "{key:?}: {err}");
    }
    for value in ["a b", "a=b", "a;b", "a\nb", &"v".repeat(1024)] {
        let err = limits.check_value("k", value).unwrap_err();
        assert!(matches!(err, PmiError::InvalidValue { .. }), "{value:?}: {err}");
    }
    let err = limits.check_value("card", "x y").unwrap_err().to_string();
    assert!(err.contains("\"card\"") && err.contains("' '"), "{err}");
}

#[test]
fn server_maxima_count_the_terminator_and_never_raise_the_portable_limits() {
    assert_eq!(Limits::from_server_maxima(64, 1024), Limits::PORTABLE);
    assert_eq!(Limits::from_server_maxima(4096, 65536), Limits::PORTABLE);
    let small = Limits::from_server_maxima(32, 256);
    assert_eq!((small.key_len, small.value_len), (31, 255));
    assert_eq!(Limits::from_server_maxima(-1, 0).value_len, 0);
}

#[test]
fn job_ids_become_file_safe() {
    assert_eq!(file_safe("kvs_9011_0_632499597_vm"), "kvs_9011_0_632499597_vm");
    assert_eq!(file_safe("12.0"), "12.0");
    assert_eq!(file_safe("a/b c"), "a_b_c");
    assert_eq!(file_safe(".."), "job");
    assert_eq!(file_safe(""), "job");
}

#[test]
fn abort_messages_are_made_to_fit_one_token() {
    assert_eq!(sanitize_message("out of memory; rank=3\n"), "out_of_memory__rank_3_");
    assert_eq!(sanitize_message(&"é".repeat(300)).len(), 200);
}

#[test]
fn singleton_keeps_its_own_store() {
    let mut pmi = Singleton::new("solo".to_owned());
    assert_eq!((pmi.rank(), pmi.size(), pmi.job_id()), (0, 1, "solo"));
    pmi.put("card", "here").unwrap();
    pmi.fence().unwrap();
    assert_eq!(pmi.get("card").unwrap(), "here");
    let err = pmi.get("other").unwrap_err();
    assert!(matches!(err, PmiError::KeyNotFound { ref key, .. } if key == "other"), "{err}");
    pmi.finalize().unwrap();
    assert!(matches!(pmi.get("card"), Err(PmiError::Finalized { .. })));
}

/// A scripted PMI-2 server: answers the version line, then each frame with `reply(request)`.
fn fake_pmi2_server(
    reply: impl Fn(&WireMessage) -> Option<Vec<u8>> + Send + 'static,
) -> (Connection, std::thread::JoinHandle<Vec<WireMessage>>) {
    let (client, server) = UnixStream::pair().unwrap();
    let thread = std::thread::spawn(move || {
        let mut reader = BufReader::new(server.try_clone().unwrap());
        let mut writer = server;
        let mut line = Vec::new();
        reader.read_until(b'\n', &mut line).unwrap();
        assert_eq!(line, b"cmd=init pmi_version=2 pmi_subversion=0\n");
        writer.write_all(b"cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0\n").unwrap();
        let mut seen = Vec::new();
        loop {
            let mut prefix = [0u8; 6];
            if reader.read_exact(&mut prefix).is_err() {
                return seen;
            }
            let mut body = vec![0u8; wire2::parse_length_prefix(&prefix).unwrap()];
            reader.read_exact(&mut body).unwrap();
            let request = wire2::parse_body(&body).unwrap();
            let answer = reply(&request);
            seen.push(request);
            match answer {
                Some(bytes) => writer.write_all(&bytes).unwrap(),
                None => return seen,
            }
        }
    });
    (Connection::new(client).unwrap(), thread)
}

fn frame(body: &str) -> Option<Vec<u8>> {
    Some(format!("{:<6}{body}", body.len()).into_bytes())
}

fn slurm_like(request: &WireMessage) -> Option<Vec<u8>> {
    match request.command.as_str() {
        "fullinit" => frame("cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=1;size=2;appnum=-1;"),
        "job-getid" => frame("cmd=job-getid-response;rc=0;jobid=12.0;"),
        "kvs-put" => frame("cmd=kvs-put-response;rc=0;"),
        "kvs-fence" => frame("cmd=kvs-fence-response;rc=0;"),
        "kvs-get" if request.get("key") == Some("there") => frame("cmd=kvs-get-response;rc=0;found=TRUE;value=v;"),
        "kvs-get" => frame("cmd=kvs-get-response;rc=0;found=FALSE;"),
        "finalize" => frame("cmd=finalize-response;rc=0;"),
        _ => None,
    }
}

#[test]
fn pmi2_client_speaks_what_slurm_expects() {
    let (connection, server) = fake_pmi2_server(slurm_like);
    let mut pmi = Pmi2Client::connect(connection, 1, "12.0").unwrap();
    assert_eq!((pmi.rank(), pmi.size(), pmi.job_id()), (1, 2, "12.0"));
    pmi.put("card", "tcp://x").unwrap();
    pmi.fence().unwrap();
    assert_eq!(pmi.get("there").unwrap(), "v");
    assert!(matches!(pmi.get("absent"), Err(PmiError::KeyNotFound { .. })));
    pmi.finalize().unwrap();
    drop(pmi);
    let seen = server.join().unwrap();
    let commands: Vec<&str> = seen.iter().map(|m| m.command.as_str()).collect();
    assert_eq!(commands, ["fullinit", "job-getid", "kvs-put", "kvs-fence", "kvs-get", "kvs-get", "finalize"]);
    assert_eq!(seen[0].get("pmirank"), Some("1"));
    assert_eq!(seen[0].get("threaded"), Some("FALSE"));
    assert_eq!(seen[4].get("jobid"), Some("12.0"));
    assert_eq!(seen[4].get("srcid"), Some("-1"));
}

#[test]
fn pmi2_client_reports_garbage_and_hangups_without_panicking() {
    let (connection, _server) = fake_pmi2_server(|_| Some(b"xx    garbage".to_vec()));
    let err = Pmi2Client::connect(connection, 0, "").unwrap_err();
    assert!(matches!(err, PmiError::Malformed { during: "fullinit", .. }), "{err}");

    let (connection, _server) = fake_pmi2_server(|_| None);
    let err = Pmi2Client::connect(connection, 0, "").unwrap_err();
    assert!(matches!(err, PmiError::ServerClosed { during: "fullinit" }), "{err}");

    let (connection, _server) = fake_pmi2_server(|_| frame("cmd=fullinit-response;rc=14;errmsg=nope;"));
    let err = Pmi2Client::connect(connection, 0, "").unwrap_err().to_string();
    assert!(err.contains("rc=14") && err.contains("nope"), "{err}");
}

#[test]
fn simple_client_rejects_a_server_that_answers_the_wrong_command() {
    let (client, server) = UnixStream::pair().unwrap();
    let fake = std::thread::spawn(move || {
        let mut reader = BufReader::new(server.try_clone().unwrap());
        let mut line = Vec::new();
        reader.read_until(b'\n', &mut line).unwrap();
        let reply = wire1::encode_line(&WireMessage::new("barrier_out")).unwrap();
        (&server).write_all(reply.as_bytes()).unwrap();
    });
    let err = SimpleClient::connect(Connection::new(client).unwrap(), 0, 1).unwrap_err();
    fake.join().unwrap();
    let text = err.to_string();
    assert!(text.contains("response_to_init") && text.contains("barrier_out"), "{text}");
}
