//! PMI-1 "simple" wire format: one message per line, space-separated `key=value` tokens, the
//! first of which is `cmd=<command>`:
//!
//! ```text
//! cmd=init pmi_version=1 pmi_subversion=1
//! cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0
//! cmd=get kvsname=kvs_42_0 key=addr-3
//! cmd=get_result rc=0 msg=success value=tcp://10.0.0.3:4000
//! ```
//!
//! Checked against MPICH 4.0's hydra on this machine: attributes come in any order, `rc` is
//! absent from some replies (`barrier_out`, `maxes`), and several spaces between tokens occur in
//! older servers, so the parser skips empty tokens.

use super::{WireError, WireMessage, check_message, parse_tokens, utf8};

/// Longest line accepted, newline included. MPICH's own limit is 1024 bytes per line; a put of a
/// 1023-byte value with a 63-byte key needs about 1.2 KiB, so this leaves ample room.
pub const MAX_LINE: usize = 16 * 1024;

/// Parses one line, with or without its final `\n`.
pub fn parse_line(line: &[u8]) -> Result<WireMessage, WireError> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if line.len() >= MAX_LINE {
        return Err(WireError::TooLong { len: line.len() + 1, max: MAX_LINE });
    }
    if let Some(at) = line.iter().position(|&b| b == b'\n') {
        return Err(WireError::NotKeyValue { token: format!("(a newline inside the line at byte {at})") });
    }
    let text = utf8(line)?;
    parse_tokens(text.split(' ').filter(|token| !token.is_empty()))
}

/// Encodes `message` as one line, final `\n` included.
pub fn encode_line(message: &WireMessage) -> Result<String, WireError> {
    check_message(message, ' ')?;
    let mut line = format!("cmd={}", message.command);
    for (key, value) in &message.attributes {
        line.push(' ');
        line.push_str(key);
        line.push('=');
        line.push_str(value);
    }
    line.push('\n');
    if line.len() > MAX_LINE {
        return Err(WireError::TooLong { len: line.len(), max: MAX_LINE });
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hydra_replies_parse() {
        let reply = parse_line(b"cmd=get_result rc=0 msg=success value=(vector,(0,1,1))\n");
        let reply = reply.unwrap();
        assert_eq!(reply.command, "get_result");
        assert_eq!(reply.rc(), Ok(0));
        assert_eq!(reply.get("value"), Some("(vector,(0,1,1))"));

        let maxes = parse_line(b"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024").unwrap();
        assert_eq!(maxes.require_int("vallen_max"), Ok(1024));
        assert_eq!(maxes.rc(), Ok(0));
    }

    #[test]
    fn empty_values_and_extra_spaces_are_accepted() {
        let msg = parse_line(b"cmd=put  kvsname=k key=a value=\n").unwrap();
        assert_eq!(msg.get("value"), Some(""));
        assert_eq!(msg.attributes.len(), 3);
    }

    #[test]
    fn garbage_is_an_error_naming_the_problem() {
        let cases: [(&[u8], &str); 6] = [
            (b"", "empty"),
            (b"\n", "empty"),
            (b"put key=a", "cmd="),
            (b"mcmd=spawn", "cmd="),
            (b"cmd=put key", "\"key\""),
            (b"cmd=put \xff=1", "UTF-8"),
        ];
        for (input, needle) in cases {
            let err = parse_line(input).unwrap_err().to_string();
            assert!(err.contains(needle), "{input:?}: {err}");
        }
        let err = parse_line(b"cmd=a\nb=c\n").unwrap_err();
        assert!(err.to_string().contains("newline"), "{err}");
    }

    #[test]
    fn encoding_refuses_what_would_split_the_line() {
        for bad in ["a b", "a\nb", "a\tb"] {
            let msg = WireMessage::new("put").with("value", bad);
            assert!(encode_line(&msg).is_err(), "{bad:?} was encoded");
        }
        let msg = WireMessage::new("put").with("k=x", "v");
        assert!(encode_line(&msg).is_err());
    }

    #[test]
    fn oversized_lines_are_refused_both_ways() {
        let msg = WireMessage::new("put").with("value", "x".repeat(MAX_LINE));
        assert!(matches!(encode_line(&msg), Err(WireError::TooLong { .. })));
        let line = format!("cmd=put value={}", "x".repeat(MAX_LINE));
        assert!(matches!(parse_line(line.as_bytes()), Err(WireError::TooLong { .. })));
    }

    fn command() -> impl Strategy<Value = String> {
        "[a-z][a-z_-]{0,20}"
    }

    fn attribute() -> impl Strategy<Value = (String, String)> {
        // Values may hold `=` on the wire; spaces, `;` and control characters are refused.
        ("[A-Za-z0-9_.-]{1,64}", "[!-:<-~]{0,100}")
    }

    proptest! {
        #[test]
        fn encode_then_parse_is_identity(
            command in command(),
            attributes in proptest::collection::vec(attribute(), 0..8),
        ) {
            let message = WireMessage { command, attributes };
            let line = encode_line(&message).unwrap();
            prop_assert!(line.ends_with('\n'));
            prop_assert_eq!(parse_line(line.as_bytes()).unwrap(), message);
        }

        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse_line(&bytes);
        }

        #[test]
        fn what_parses_reencodes_to_the_same_message(text in "[a-z= ;\n\t]{0,60}") {
            if let Ok(message) = parse_line(text.as_bytes()) {
                if let Ok(line) = encode_line(&message) {
                    prop_assert_eq!(parse_line(line.as_bytes()).unwrap(), message);
                }
            }
        }
    }
}
