//! Tunables of waiting, read once from the environment.

use std::time::Duration;

use grappe_settings::{SettingError, Vars};

/// How long and how a blocked rank waits before sleeping.
///
/// Environment variables (all optional):
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `GRAPPE_SPIN_ITERS` | polls before the first yield, when cores are not oversubscribed | 4000 |
/// | `GRAPPE_YIELD_US` | µs of yielding to the OS before sleeping on the doorbell | 2000 |
/// | `GRAPPE_SLEEP_MS` | longest sleep before a waiting rank looks for dead peers | 100 |
/// | `GRAPPE_STACK_KIB` | stack of each thread rank (reserved, committed lazily) | 8192 |
/// | `GRAPPE_BIND` | `core`: pin workers to cores round-robin; `none`: let the OS place them | `core` |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitSettings {
    /// Polls before yielding; 0 when ranks outnumber cores.
    pub spin_iters: u32,
    /// Time spent yielding before sleeping.
    pub yield_for: Duration,
    /// Longest single sleep.
    pub sleep_timeout: Duration,
    /// Stack bytes of each coroutine rank.
    pub stack_bytes: usize,
    /// Pin workers to cores.
    pub bind: bool,
}

impl WaitSettings {
    /// Reads the settings from the environment. `oversubscribed` tells
    /// whether the host runs more ranks than it has cores.
    pub fn from_env(oversubscribed: bool) -> Result<WaitSettings, SettingError> {
        WaitSettings::from_vars(oversubscribed, Vars::process())
    }

    /// The same, from `vars`.
    pub fn from_vars(oversubscribed: bool, vars: Vars<'_>) -> Result<WaitSettings, SettingError> {
        let spin: u32 = vars.number("GRAPPE_SPIN_ITERS", 4000, "a number of polls")?;
        Ok(WaitSettings {
            spin_iters: if oversubscribed { 0 } else { spin },
            yield_for: Duration::from_micros(vars.number("GRAPPE_YIELD_US", 2000, "microseconds")?),
            sleep_timeout: Duration::from_millis(vars.number::<u64>("GRAPPE_SLEEP_MS", 100, "milliseconds")?.max(1)),
            stack_bytes: vars.number::<usize>("GRAPPE_STACK_KIB", 8192, "a number of KiB")?.max(64) * 1024,
            bind: vars.word("GRAPPE_BIND", true, &[("core", true), ("none", false)])?,
        })
    }
}

impl Default for WaitSettings {
    fn default() -> Self {
        WaitSettings {
            spin_iters: 4000,
            yield_for: Duration::from_micros(2000),
            sleep_timeout: Duration::from_millis(100),
            stack_bytes: 8 << 20,
            bind: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn read(oversubscribed: bool, pairs: &[(&str, &str)]) -> Result<WaitSettings, SettingError> {
        let lookup = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v));
        WaitSettings::from_vars(oversubscribed, Vars::from_lookup(&lookup))
    }

    #[test]
    fn settings_are_read_with_their_floors() {
        let settings = read(true, &[("GRAPPE_SLEEP_MS", "0"), ("GRAPPE_STACK_KIB", "1"), ("GRAPPE_BIND", "none")]);
        let settings = settings.unwrap();
        assert_eq!(settings.spin_iters, 0, "oversubscribed ranks do not spin");
        assert_eq!(
            (settings.sleep_timeout, settings.stack_bytes, settings.bind),
            (Duration::from_millis(1), 64 << 10, false)
        );
        assert_eq!(read(false, &[]).unwrap().spin_iters, 4000);
    }

    #[test]
    fn a_bad_setting_names_the_variable_its_value_and_what_it_takes() {
        let error = read(false, &[("GRAPPE_YIELD_US", "2ms")]).unwrap_err();
        assert_eq!(error.to_string(), "GRAPPE_YIELD_US=\"2ms\": expected microseconds");
        let error = read(false, &[("GRAPPE_BIND", "cores")]).unwrap_err();
        assert_eq!(error.to_string(), "GRAPPE_BIND=\"cores\": expected core or none");
    }
}
