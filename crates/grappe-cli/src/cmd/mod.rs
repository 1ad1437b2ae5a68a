//! One module per subcommand, each with its clap arguments and an `execute` returning the exit
//! status.

pub mod checkpoint_server;
pub mod open_files;
pub mod run;
pub mod time;
pub mod trace;

/// An error and its causes on one line, as `{:#}` writes them, but without
/// a cause whose text the message before it already ends with (errors
/// that print their source and also return it from `source()`, as the
/// library errors naming a file do, would otherwise say it twice).
pub fn describe(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.ends_with(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_said_is_not_repeated() {
        let io = std::io::Error::from_raw_os_error(28);
        let named = anyhow::Error::new(io).context(format!("out.json: {}", std::io::Error::from_raw_os_error(28)));
        assert_eq!(describe(&named), "out.json: No space left on device (os error 28)");
        let plain = anyhow::anyhow!("disk full").context("cannot write out.json");
        assert_eq!(describe(&plain), "cannot write out.json: disk full");
    }
}
