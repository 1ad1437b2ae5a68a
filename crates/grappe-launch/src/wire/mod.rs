//! The two PMI wire formats, as pure functions from bytes to messages and back.
//!
//! Both formats carry the same thing, a command and ordered `key=value` attributes, so both
//! parse into one [`WireMessage`]:
//! - [`simple`]: PMI-1 "simple", one line per message, `cmd=put kvsname=k key=a value=b\n`
//!   (MPICH's hydra, Slurm's pmi2 plugin in PMI-1 mode, and `grappe run`).
//! - [`pmi2`]: PMI-2, a 6-character decimal length then `cmd=kvs-put;key=a;value=b;` (Slurm's
//!   `srun --mpi=pmi2`).
//!
//! Parsers never panic: anything they cannot make sense of is a [`WireError`] (a fuzz target in
//! `fuzz/` checks that). Encoders refuse text that would change the framing (the format's
//! separator, a space or `;`, or a control character) instead of writing a corrupt message.

pub mod pmi2;
pub mod simple;

use std::fmt;

/// One PMI message: the value of its leading `cmd=` and the attributes after it, in wire order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireMessage {
    /// The command, e.g. `put`, `barrier_out`, `kvs-fence-response`.
    pub command: String,
    /// The `key=value` attributes after the command, in the order they were written.
    pub attributes: Vec<(String, String)>,
}

impl WireMessage {
    /// A message with no attributes.
    pub fn new(command: impl Into<String>) -> Self {
        WireMessage { command: command.into(), attributes: Vec::new() }
    }

    /// This message with one more attribute.
    pub fn with(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.attributes.push((key.into(), value.to_string()));
        self
    }

    /// The value of the first attribute named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key`, or an error naming the command and the key.
    pub fn require(&self, key: &str) -> Result<&str, WireError> {
        self.get(key).ok_or_else(|| WireError::MissingAttribute { command: self.command.clone(), key: key.to_owned() })
    }

    /// The value of `key` as an integer (which must be present).
    pub fn require_int(&self, key: &str) -> Result<i64, WireError> {
        let text = self.require(key)?;
        text.trim().parse().map_err(|_| self.bad(key, text, "an integer"))
    }

    /// The `rc` attribute; a missing `rc` means success (hydra omits it in several replies).
    pub fn rc(&self) -> Result<i64, WireError> {
        match self.get("rc") {
            None => Ok(0),
            Some(_) => self.require_int("rc"),
        }
    }

    fn bad(&self, key: &str, value: &str, expected: &'static str) -> WireError {
        WireError::BadAttribute { command: self.command.clone(), key: key.to_owned(), value: excerpt(value), expected }
    }
}

impl fmt::Display for WireMessage {
    /// A readable one-line form for error messages (not a wire encoding).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cmd={}", self.command)?;
        for (key, value) in &self.attributes {
            write!(f, " {key}={}", excerpt(value))?;
        }
        Ok(())
    }
}

/// Why bytes could not be parsed as a PMI message, or a message could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    #[error("empty PMI message")]
    Empty,
    #[error("PMI message is not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
    #[error("PMI message does not start with `cmd=<command>`: {start:?}")]
    MissingCommand { start: String },
    #[error("PMI token {token:?} is not a key=value pair")]
    NotKeyValue { token: String },
    #[error("PMI-2 message contains an escaped ';' (\";;\"), which grappe does not support")]
    EscapedSemicolon,
    #[error("PMI message of {len} bytes is longer than the limit of {max} bytes")]
    TooLong { len: usize, max: usize },
    #[error("PMI-2 length prefix {prefix:?} is not a positive decimal number of at most 6 digits")]
    BadLengthPrefix { prefix: String },
    #[error("PMI `{command}` message has no `{key}=` attribute")]
    MissingAttribute { command: String, key: String },
    #[error("PMI `{command}` message has `{key}={value}`, which is not {expected}")]
    BadAttribute { command: String, key: String, value: String, expected: &'static str },
    #[error("cannot put {what} {text:?} on the PMI wire: {problem}")]
    Unencodable { what: &'static str, text: String, problem: TextProblem },
}

/// What is wrong with a key, value or command name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TextProblem {
    #[error("it is empty")]
    Empty,
    #[error("it is {len} bytes long, more than the maximum of {max}")]
    TooLong { len: usize, max: usize },
    #[error("it contains {ch:?} at byte {at}, which the PMI wire formats cannot carry")]
    Forbidden { ch: char, at: usize },
}

/// Checks that `text` can travel inside a PMI token of either format: not a space, `;` or
/// control character anywhere (those delimit tokens and messages), and no `=` when `is_key`.
pub fn check_token(text: &str, is_key: bool) -> Result<(), TextProblem> {
    check_token_in(text, is_key, ' ')?;
    check_token_in(text, is_key, ';')
}

/// Like [`check_token`] for one format only, whose tokens are separated by `separator`.
pub(crate) fn check_token_in(text: &str, is_key: bool, separator: char) -> Result<(), TextProblem> {
    if is_key && text.is_empty() {
        return Err(TextProblem::Empty);
    }
    let forbidden = |ch: char| ch == separator || ch.is_control() || (is_key && ch == '=');
    match text.char_indices().find(|&(_, ch)| forbidden(ch)) {
        Some((at, ch)) => Err(TextProblem::Forbidden { ch, at }),
        None => Ok(()),
    }
}

/// Checks every token of `message` with [`check_token_in`].
fn check_message(message: &WireMessage, separator: char) -> Result<(), WireError> {
    let unencodable = |what, text: &str, problem| WireError::Unencodable { what, text: excerpt(text), problem };
    let check = |text: &str, is_key| check_token_in(text, is_key, separator);
    check(&message.command, true).map_err(|p| unencodable("command", &message.command, p))?;
    for (key, value) in &message.attributes {
        check(key, true).map_err(|p| unencodable("key", key, p))?;
        check(value, false).map_err(|p| unencodable("value", value, p))?;
    }
    Ok(())
}

/// Parses tokens `cmd=<command>`, `key=value`... (already split) into a message.
fn parse_tokens<'a>(mut tokens: impl Iterator<Item = &'a str>) -> Result<WireMessage, WireError> {
    let first = tokens.next().ok_or(WireError::Empty)?;
    let command = match first.split_once('=') {
        Some(("cmd", command)) if !command.is_empty() => command,
        _ => {
            return Err(WireError::MissingCommand { start: excerpt(first) });
        }
    };
    let mut message = WireMessage::new(command);
    for token in tokens {
        match token.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                message.attributes.push((key.to_owned(), value.to_owned()));
            }
            _ => {
                return Err(WireError::NotKeyValue { token: excerpt(token) });
            }
        }
    }
    Ok(message)
}

/// `bytes` as UTF-8, or an error giving the offset of the first bad byte.
fn utf8(bytes: &[u8]) -> Result<&str, WireError> {
    std::str::from_utf8(bytes).map_err(|e| WireError::NotUtf8 { offset: e.valid_up_to() })
}

/// At most 80 characters of `text`, so that an error about a huge token stays readable.
pub(crate) fn excerpt(text: &str) -> String {
    const KEEP: usize = 80;
    match text.char_indices().nth(KEEP) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_with_framing_characters_are_refused() {
        assert_eq!(check_token("", true), Err(TextProblem::Empty));
        assert_eq!(check_token("", false), Ok(()));
        assert_eq!(check_token("a b", false), Err(TextProblem::Forbidden { ch: ' ', at: 1 }));
        assert_eq!(check_token("ab;", false), Err(TextProblem::Forbidden { ch: ';', at: 2 }));
        assert_eq!(check_token("a\n", false), Err(TextProblem::Forbidden { ch: '\n', at: 1 }));
        assert_eq!(check_token("k=v", true), Err(TextProblem::Forbidden { ch: '=', at: 1 }));
        assert_eq!(check_token("(vector,(0,1,4))", false), Ok(()));
    }

    #[test]
    fn rc_defaults_to_success_and_garbage_is_an_error() {
        assert_eq!(WireMessage::new("barrier_out").rc(), Ok(0));
        assert_eq!(WireMessage::new("x").with("rc", "-1").rc(), Ok(-1));
        let err = WireMessage::new("x").with("rc", "nope").rc().unwrap_err();
        assert!(err.to_string().contains("rc=nope"), "{err}");
    }

    #[test]
    fn excerpt_cuts_long_text_on_a_char_boundary() {
        let long = "é".repeat(200);
        let cut = excerpt(&long);
        assert!(cut.ends_with("..."));
        assert_eq!(cut.chars().count(), 83);
    }
}
