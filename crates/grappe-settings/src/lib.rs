//! Settings from environment variables, read the same way by every layer
//! that has some (the protocols, the scheduler, the recorder, tracing,
//! fault tolerance, the host segment's size).
//!
//! A value that cannot be used is a [`SettingError`] naming the variable,
//! the value and what the variable takes, whichever layer reads it. A
//! variable that is not set takes its default. The variables are read
//! through [`Vars`], which is the process's environment or, for a launcher
//! checking what its ranks will read and for tests, any lookup.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::borrow::Cow;
use std::ffi::OsString;
use std::path::PathBuf;
use std::str::FromStr;

/// A setting whose value cannot be used: the variable, its value (empty
/// when it is missing but needed) and what it takes; and, where another
/// parser refused the value, that parser's error.
#[derive(Debug, thiserror::Error)]
#[error("{var}={value:?}: expected {expected}{}", cause.as_ref().map(|c| format!(" ({c})")).unwrap_or_default())]
pub struct SettingError {
    /// The variable.
    pub var: &'static str,
    /// Its value, as set (lossily decoded if it is not UTF-8).
    pub value: String,
    /// What the variable takes, completing "expected ...".
    pub expected: Cow<'static, str>,
    /// The refusal of the parser the value went through, if another one.
    #[source]
    pub cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl SettingError {
    /// `var` set to `value`, where it takes `expected`.
    pub fn new(var: &'static str, value: impl Into<String>, expected: impl Into<Cow<'static, str>>) -> SettingError {
        SettingError { var, value: value.into(), expected: expected.into(), cause: None }
    }

    /// The same error, with the refusal of the parser the value went through.
    pub fn because(self, cause: impl std::error::Error + Send + Sync + 'static) -> SettingError {
        SettingError { cause: Some(Box::new(cause)), ..self }
    }
}

/// Where settings are read: the process's environment, or a lookup.
#[derive(Clone, Copy)]
pub struct Vars<'a> {
    lookup: &'a dyn Fn(&str) -> Option<OsString>,
}

impl Vars<'static> {
    /// The environment of this process.
    pub fn process() -> Vars<'static> {
        Vars { lookup: &process_var }
    }
}

fn process_var(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

impl<'a> Vars<'a> {
    /// The variables `lookup` gives (what a job's ranks will read, for a
    /// launcher to check before it starts them; a test's own).
    pub fn from_lookup(lookup: &'a dyn Fn(&str) -> Option<OsString>) -> Vars<'a> {
        Vars { lookup }
    }

    /// The value of `var`; `None` if it is not set. A value that is not
    /// UTF-8 is refused.
    pub fn text(&self, var: &'static str) -> Result<Option<String>, SettingError> {
        match (self.lookup)(var) {
            None => Ok(None),
            Some(raw) => match raw.into_string() {
                Ok(text) => Ok(Some(text)),
                Err(raw) => Err(SettingError::new(var, raw.to_string_lossy(), "UTF-8 text")),
            },
        }
    }

    /// `var` as a path, any bytes; `None` if it is not set or empty.
    pub fn path(&self, var: &'static str) -> Option<PathBuf> {
        (self.lookup)(var).filter(|path| !path.is_empty()).map(PathBuf::from)
    }

    /// The value of `var`, not set or set empty alike: `None`.
    pub fn non_empty(&self, var: &'static str) -> Result<Option<String>, SettingError> {
        Ok(self.text(var)?.filter(|text| !text.is_empty()))
    }

    /// `var` as a number (surrounding blanks ignored), `default` if it is
    /// not set; `expected` says what the number is ("a number of bytes").
    pub fn number<T: FromStr>(&self, var: &'static str, default: T, expected: &'static str) -> Result<T, SettingError> {
        match self.text(var)? {
            None => Ok(default),
            Some(text) => text.trim().parse().map_err(|_| SettingError::new(var, text, expected)),
        }
    }

    /// `var` as one of `words`, `default` if it is not set.
    pub fn word<T: Copy>(&self, var: &'static str, default: T, words: &[(&str, T)]) -> Result<T, SettingError> {
        let Some(text) = self.text(var)? else { return Ok(default) };
        match words.iter().find(|(word, _)| *word == text) {
            Some(&(_, value)) => Ok(value),
            None => Err(SettingError::new(var, text, one_of(words.iter().map(|(word, _)| *word)))),
        }
    }
}

/// "a", "a or b", "a, b or c".
fn one_of<'w>(words: impl ExactSizeIterator<Item = &'w str>) -> String {
    let count = words.len();
    let mut text = String::new();
    for (i, word) in words.enumerate() {
        let sep = match i {
            0 => "",
            _ if i + 1 == count => " or ",
            _ => ", ",
        };
        text.push_str(sep);
        text.push_str(word);
    }
    text
}

#[cfg(test)]
mod tests {
    use std::os::unix::ffi::OsStringExt;

    use super::*;

    fn with<T>(pairs: &[(&str, &str)], read: impl FnOnce(Vars<'_>) -> T) -> T {
        let lookup = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v));
        read(Vars::from_lookup(&lookup))
    }

    #[test]
    fn numbers_take_their_default_when_unset_and_ignore_blanks() {
        with(&[("N", " 42 ")], |vars| {
            assert_eq!(vars.number("N", 7u32, "a count").unwrap(), 42);
            assert_eq!(vars.number("M", 7u32, "a count").unwrap(), 7);
        });
    }

    #[test]
    fn a_bad_number_names_the_variable_its_value_and_what_it_takes() {
        for bad in ["12k", "", "-1", "99999999999999999999"] {
            let error =
                with(&[("GRAPPE_X", bad)], |vars| vars.number("GRAPPE_X", 1u32, "a number of bytes")).unwrap_err();
            assert_eq!((error.var, error.value.as_str()), ("GRAPPE_X", bad));
            assert_eq!(error.to_string(), format!("GRAPPE_X={bad:?}: expected a number of bytes"));
        }
    }

    #[test]
    fn words_are_one_of_a_list_that_the_error_spells_out() {
        let words = [("end", 0), ("full", 1), ("thread", 2)];
        with(&[("F", "thread")], |vars| assert_eq!(vars.word("F", 1, &words).unwrap(), 2));
        with(&[], |vars| assert_eq!(vars.word("F", 1, &words).unwrap(), 1));
        let error = with(&[("F", "Full")], |vars| vars.word("F", 1, &words)).unwrap_err();
        assert_eq!(error.to_string(), "F=\"Full\": expected end, full or thread");
        let error = with(&[("F", "x")], |vars| vars.word("F", 1, &words[..2])).unwrap_err();
        assert_eq!(error.expected, "end or full");
    }

    #[test]
    fn a_value_that_is_not_utf8_is_refused_not_taken_for_unset() {
        let lookup = |_: &str| Some(OsString::from_vec(vec![b'4', 0xff]));
        let error = Vars::from_lookup(&lookup).number("N", 1u32, "a count").unwrap_err();
        assert_eq!(error.expected, "UTF-8 text");
        assert_eq!(error.value, "4\u{fffd}");
    }

    #[test]
    fn a_cause_is_shown_and_is_the_source() {
        let cause = "x".parse::<u8>().unwrap_err();
        let error = SettingError::new("V", "x", "a byte").because(cause.clone());
        assert_eq!(error.to_string(), format!("V=\"x\": expected a byte ({cause})"));
        let source = std::error::Error::source(&error).expect("a source");
        assert_eq!(source.to_string(), cause.to_string());
    }

    #[test]
    fn empty_counts_as_unset_only_where_asked() {
        with(&[("D", "")], |vars| {
            assert_eq!(vars.text("D").unwrap().as_deref(), Some(""));
            assert_eq!(vars.non_empty("D").unwrap(), None);
            assert_eq!(vars.path("D"), None);
        });
    }

    #[test]
    fn paths_take_any_bytes() {
        let lookup = |_: &str| Some(OsString::from_vec(vec![b'/', 0xff]));
        assert_eq!(Vars::from_lookup(&lookup).path("P"), Some(PathBuf::from(OsString::from_vec(vec![b'/', 0xff]))));
    }
}
