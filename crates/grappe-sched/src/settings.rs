//! Tunables of waiting, read once from the environment.

use std::time::Duration;

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
    pub fn from_env(oversubscribed: bool) -> Result<WaitSettings, String> {
        let spin: u32 = parse("GRAPPE_SPIN_ITERS", 4000)?;
        Ok(WaitSettings {
            spin_iters: if oversubscribed { 0 } else { spin },
            yield_for: Duration::from_micros(parse("GRAPPE_YIELD_US", 2000)?),
            sleep_timeout: Duration::from_millis(parse::<u64>("GRAPPE_SLEEP_MS", 100)?.max(1)),
            stack_bytes: parse::<usize>("GRAPPE_STACK_KIB", 8192)?.max(64) * 1024,
            bind: match std::env::var("GRAPPE_BIND").as_deref() {
                Err(_) | Ok("core") => true,
                Ok("none") => false,
                Ok(other) => return Err(format!("GRAPPE_BIND={other:?}: expected `core` or `none`")),
            },
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

fn parse<T: std::str::FromStr>(var: &str, default: T) -> Result<T, String> {
    match std::env::var(var) {
        Err(_) => Ok(default),
        Ok(text) => text.trim().parse().map_err(|_| format!("{var}={text:?} is not a valid number")),
    }
}
