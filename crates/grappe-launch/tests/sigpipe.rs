//! A process manager that hung up gives the PMI client an error, not a
//! SIGPIPE: C programs on grappe's MPI library keep SIGPIPE's default
//! action (which kills), unlike Rust programs. Its own test binary, since it
//! sets that action for the whole process.

use grappe_launch::pmi::{Connection, PmiError};
use grappe_launch::wire::WireMessage;
use std::os::unix::net::UnixStream;

#[test]
fn writing_to_a_process_manager_that_hung_up_is_an_error_not_a_signal() {
    // SAFETY: restores the default action of one signal, as a C program
    // has it; no handler is installed.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(theirs);
    let mut connection = Connection::new(ours).unwrap();
    let sent = connection.send_line(&WireMessage::new("barrier_in"), "barrier");
    assert!(matches!(sent, Err(PmiError::ServerClosed { during: "barrier" })), "{sent:?}");
}
