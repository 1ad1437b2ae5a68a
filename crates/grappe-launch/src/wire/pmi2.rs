//! PMI-2 wire format: a 6-byte decimal length, then that many bytes of `;`-terminated
//! `key=value` pairs, the first being `cmd=<command>`:
//!
//! ```text
//! 29    cmd=kvs-put;key=a;value=b;
//! ```
//!
//! Checked against Slurm 22.05's pmi2 plugin (`src/plugins/mpi/pmi2/client.c`, `pmi2.c`): it
//! reads the length with `atoi` of 6 bytes and writes replies left-justified (`"%-6d"`), while
//! MPICH's client writes them right-justified, so both paddings parse here. Slurm refuses a
//! request whose last value is not followed by `;`, so the encoder always ends with one. Values
//! cannot contain `;` (Slurm does not implement MPICH's `;;` escape).
//!
//! Before the first framed message a PMI-2 client sends the PMI-1 line
//! `cmd=init pmi_version=2 pmi_subversion=0` and reads a PMI-1 reply (see [`super::simple`]).

use super::{WireError, WireMessage, check_message, parse_tokens, utf8};

/// Bytes of the length prefix.
pub const LENGTH_PREFIX: usize = 6;

/// Largest body a 6-digit prefix can announce.
pub const MAX_BODY: usize = 999_999;

/// Parses the 6-byte length prefix: a positive decimal number, space-padded on either side.
pub fn parse_length_prefix(prefix: &[u8]) -> Result<usize, WireError> {
    let bad = || WireError::BadLengthPrefix { prefix: String::from_utf8_lossy(prefix).into_owned() };
    if prefix.len() != LENGTH_PREFIX {
        return Err(bad());
    }
    let digits = std::str::from_utf8(prefix).map_err(|_| bad())?.trim_matches(' ');
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match digits.parse::<usize>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(len) => Ok(len),
    }
}

/// Parses a body (the bytes after the prefix): `cmd=x;k=v;...`, the final `;` optional.
pub fn parse_body(body: &[u8]) -> Result<WireMessage, WireError> {
    if body.len() > MAX_BODY {
        return Err(WireError::TooLong { len: body.len(), max: MAX_BODY });
    }
    let text = utf8(body)?;
    let text = text.strip_suffix(';').unwrap_or(text);
    if text.is_empty() {
        return Err(WireError::Empty);
    }
    if text.split(';').any(str::is_empty) {
        return Err(WireError::EscapedSemicolon);
    }
    parse_tokens(text.split(';'))
}

/// Splits one complete frame off the front of `buffer`: `Ok(None)` when more bytes are needed,
/// otherwise the message and the number of bytes it used.
pub fn decode_frame(buffer: &[u8]) -> Result<Option<(WireMessage, usize)>, WireError> {
    let Some(prefix) = buffer.get(..LENGTH_PREFIX) else {
        return Ok(None);
    };
    let len = parse_length_prefix(prefix)?;
    match buffer.get(LENGTH_PREFIX..LENGTH_PREFIX + len) {
        None => Ok(None),
        Some(body) => Ok(Some((parse_body(body)?, LENGTH_PREFIX + len))),
    }
}

/// The body of `message`: `cmd=x;k=v;`, every pair terminated by `;`.
pub fn encode_body(message: &WireMessage) -> Result<String, WireError> {
    check_message(message, ';')?;
    let mut body = format!("cmd={};", message.command);
    for (key, value) in &message.attributes {
        body.push_str(key);
        body.push('=');
        body.push_str(value);
        body.push(';');
    }
    if body.len() > MAX_BODY {
        return Err(WireError::TooLong { len: body.len(), max: MAX_BODY });
    }
    Ok(body)
}

/// A complete frame: the left-justified length prefix (as Slurm writes it) and the body.
pub fn encode_frame(message: &WireMessage) -> Result<String, WireError> {
    let body = encode_body(message)?;
    Ok(format!("{:<width$}{body}", body.len(), width = LENGTH_PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn slurm_replies_decode() {
        let frame = b"46    cmd=kvs-get-response;rc=0;found=TRUE;value=v0;";
        let (reply, used) = decode_frame(frame).unwrap().unwrap();
        assert_eq!(used, frame.len());
        assert_eq!(reply.command, "kvs-get-response");
        assert_eq!(reply.get("found"), Some("TRUE"));
        assert_eq!(reply.get("value"), Some("v0"));
    }

    #[test]
    fn both_paddings_of_the_prefix_parse() {
        assert_eq!(parse_length_prefix(b"26    "), Ok(26));
        assert_eq!(parse_length_prefix(b"    26"), Ok(26));
        assert_eq!(parse_length_prefix(b"999999"), Ok(999_999));
        for bad in [&b"      "[..], b"0     ", b"2 6   ", b"-5    ", b"+5    ", b"12345", b"ab    "] {
            assert!(parse_length_prefix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn encoded_frames_match_what_slurm_expects() {
        let message = WireMessage::new("kvs-put").with("key", "a").with("value", "b");
        assert_eq!(encode_frame(&message).unwrap(), "26    cmd=kvs-put;key=a;value=b;");
    }

    #[test]
    fn partial_frames_ask_for_more() {
        let frame = encode_frame(&WireMessage::new("kvs-fence")).unwrap();
        for cut in 0..frame.len() {
            assert_eq!(decode_frame(&frame.as_bytes()[..cut]), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn garbage_bodies_are_errors() {
        assert_eq!(parse_body(b""), Err(WireError::Empty));
        assert_eq!(parse_body(b";"), Err(WireError::Empty));
        assert_eq!(parse_body(b"cmd=a;;b=c;"), Err(WireError::EscapedSemicolon));
        assert!(matches!(parse_body(b"key=a;"), Err(WireError::MissingCommand { .. })));
        assert!(matches!(parse_body(b"cmd=a;oops;"), Err(WireError::NotKeyValue { .. })));
        assert!(matches!(parse_body(b"cmd=a;\xc3;"), Err(WireError::NotUtf8 { offset: 6 })));
    }

    #[test]
    fn encoding_refuses_semicolons_and_newlines() {
        for bad in ["a;b", "a\nb"] {
            let message = WireMessage::new("kvs-put").with("value", bad);
            assert!(encode_frame(&message).is_err(), "{bad:?} was encoded");
        }
    }

    proptest! {
        #[test]
        fn encode_then_decode_is_identity(
            command in "[a-z][a-z-]{0,24}",
            attributes in proptest::collection::vec(
                ("[A-Za-z0-9_-]{1,64}", "[!-:<-~]{0,200}"), 0..8),
        ) {
            let message = WireMessage { command, attributes };
            let frame = encode_frame(&message).unwrap();
            let (decoded, used) = decode_frame(frame.as_bytes()).unwrap().unwrap();
            prop_assert_eq!(used, frame.len());
            prop_assert_eq!(decoded, message);
        }

        #[test]
        fn decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode_frame(&bytes);
            let _ = parse_body(&bytes);
        }

        #[test]
        fn decoder_never_panics_on_plausible_frames(
            len in 0usize..40, body in "[a-z=;]{0,40}"
        ) {
            let frame = format!("{len:<6}{body}");
            let _ = decode_frame(frame.as_bytes());
        }
    }
}
