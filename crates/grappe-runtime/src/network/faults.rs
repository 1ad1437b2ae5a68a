//! A worse network than the machine's, emulated inside the links between
//! hosts (for tests, and where `tc netem` is not available):
//!
//! * `GRAPPE_NET_DELAY_US=N`: every frame sent to a rank of another host
//!   is held N µs before it goes to the socket (added one-way latency;
//!   order kept);
//! * `GRAPPE_NET_BANDWIDTH=B`: every link carries at most B bytes per
//!   second (`k`, `M`, `G`: thousands, millions, billions);
//! * `GRAPPE_NET_DROP_AFTER_MS=T`: T ms after the links are made, this
//!   process cuts them, as a failing network would: the job then fails,
//!   naming a rank lost and its host. `GRAPPE_NET_DROP_LINK=A-B` cuts only
//!   the link between ranks A and B.
//!
//! The shaping is done by the links themselves (`grappe_fabric_tcp::shape`);
//! a link that is not shaped pays nothing for it.

use std::num::NonZeroU64;
use std::time::Duration;

use grappe_fabric_tcp::{Cutter, Shaping};
use grappe_settings::{SettingError, Vars};

use crate::StartError;
use crate::job::Placement;

/// The longest delay taken: a minute is no network's latency.
const MAX_DELAY_US: u64 = 60_000_000;

const DELAY_EXPECTED: &str = "microseconds (at most 60000000)";
const RATE_EXPECTED: &str = "bytes per second, at least 1, with an optional k, M or G (10^3, 10^6, 10^9)";
const LINK_EXPECTED: &str = "two ranks of different hosts, as `A-B`";

/// The faults to inject in this process's links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct NetFaults {
    /// How every link is slowed down; `None`: not at all.
    pub shaping: Option<Shaping>,
    /// When links are cut, and which.
    pub drop: Option<LinkDrop>,
}

/// Links cut after a while (`GRAPPE_NET_DROP_AFTER_MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LinkDrop {
    /// Time from the links' set-up to the cut.
    pub after: Duration,
    /// The two ranks whose link is cut; `None`: every link.
    pub between: Option<(usize, usize)>,
}

impl NetFaults {
    /// Reads the settings (see the module's documentation).
    pub fn read(vars: Vars<'_>) -> Result<NetFaults, SettingError> {
        let delay_us: u64 = vars.number("GRAPPE_NET_DELAY_US", 0, DELAY_EXPECTED)?;
        if delay_us > MAX_DELAY_US {
            return Err(SettingError::new("GRAPPE_NET_DELAY_US", delay_us.to_string(), DELAY_EXPECTED));
        }
        let rate = match vars.text("GRAPPE_NET_BANDWIDTH")? {
            None => None,
            Some(text) => {
                Some(parse_rate(&text).ok_or_else(|| SettingError::new("GRAPPE_NET_BANDWIDTH", text, RATE_EXPECTED))?)
            }
        };
        let delay = Duration::from_micros(delay_us);
        let shaping = (delay > Duration::ZERO || rate.is_some()).then_some(Shaping { delay, rate });
        let between = match vars.text("GRAPPE_NET_DROP_LINK")? {
            None => None,
            Some(text) => {
                Some(parse_pair(&text).ok_or_else(|| SettingError::new("GRAPPE_NET_DROP_LINK", text, LINK_EXPECTED))?)
            }
        };
        let drop = match vars.text("GRAPPE_NET_DROP_AFTER_MS")? {
            None => None,
            Some(_) => {
                let millis: u64 = vars.number("GRAPPE_NET_DROP_AFTER_MS", 0, "milliseconds")?;
                Some(LinkDrop { after: Duration::from_millis(millis), between })
            }
        };
        if let (None, Some((a, b))) = (drop, between) {
            return Err(SettingError::new(
                "GRAPPE_NET_DROP_LINK",
                format!("{a}-{b}"),
                "GRAPPE_NET_DROP_AFTER_MS too, which says when to cut the link",
            ));
        }
        Ok(NetFaults { shaping, drop })
    }

    /// The name of a fault setting that is set, if one is: for a fabric
    /// that does not emulate faults, to refuse it by name.
    #[cfg_attr(not(feature = "libfabric"), allow(dead_code))]
    pub fn setting_name(&self) -> Option<&'static str> {
        match (self.shaping, self.drop) {
            (Some(Shaping { delay, .. }), _) if delay > Duration::ZERO => Some("GRAPPE_NET_DELAY_US"),
            (Some(_), _) => Some("GRAPPE_NET_BANDWIDTH"),
            (None, Some(_)) => Some("GRAPPE_NET_DROP_AFTER_MS"),
            (None, None) => None,
        }
    }

    /// Refuses a link to cut that the job does not have.
    pub fn check(&self, placement: &Placement) -> Result<(), SettingError> {
        let Some(LinkDrop { between: Some((a, b)), .. }) = self.drop else { return Ok(()) };
        let world = placement.rank_host.len();
        let refuse = |why: String| SettingError::new("GRAPPE_NET_DROP_LINK", format!("{a}-{b}"), why);
        if a >= world || b >= world {
            return Err(refuse(format!("{LINK_EXPECTED}, among the job's {world} ranks")));
        }
        let host = placement.rank_host[a];
        if host == placement.rank_host[b] {
            let name = placement.host_label(host);
            return Err(refuse(format!(
                "{LINK_EXPECTED} (ranks {a} and {b} both run on host {name}: no network link)"
            )));
        }
        Ok(())
    }

    /// True if the link of rank `r` with rank `q` is to be cut.
    pub fn cuts(&self, r: usize, q: usize) -> bool {
        match self.drop {
            None => false,
            Some(LinkDrop { between: None, .. }) => true,
            Some(LinkDrop { between: Some((a, b)), .. }) => (r, q) == (a, b) || (r, q) == (b, a),
        }
    }
}

/// Cuts every link of `cutters` (owner, peer, cutter) `after` from now,
/// on a thread of its own, and says so.
pub(crate) fn cut_after(after: Duration, cutters: Vec<(usize, usize, Cutter)>) -> Result<(), StartError> {
    if cutters.is_empty() {
        return Ok(());
    }
    std::thread::Builder::new()
        .name("grappe-net-drop".into())
        .spawn(move || {
            std::thread::sleep(after);
            let pairs: Vec<String> = cutters.iter().map(|(r, q, _)| format!("{r}-{q}")).collect();
            crate::say(&format!(
                "GRAPPE_NET_DROP_AFTER_MS={}: cutting the network links of ranks {}",
                after.as_millis(),
                pairs.join(", ")
            ));
            for (r, q, cutter) in &cutters {
                if let Err(e) = cutter.cut() {
                    crate::say(&format!("warning: cannot cut the link of rank {r} with rank {q}: {e}"));
                }
            }
        })
        .map(drop)
        .map_err(|e| StartError::NetworkSetUp(format!("cannot start the thread that cuts the network links: {e}")))
}

/// `125M`, `1G`, `64k`, `1000`: bytes per second.
fn parse_rate(text: &str) -> Option<NonZeroU64> {
    let text = text.trim();
    let (digits, scale) = match text.char_indices().last()? {
        (at, 'k' | 'K') => (&text[..at], 1_000),
        (at, 'M') => (&text[..at], 1_000_000),
        (at, 'G') => (&text[..at], 1_000_000_000),
        _ => (text, 1),
    };
    let number: u64 = digits.trim().parse().ok()?;
    NonZeroU64::new(number.checked_mul(scale)?)
}

/// `A-B`: two different ranks.
fn parse_pair(text: &str) -> Option<(usize, usize)> {
    let (a, b) = text.trim().split_once('-')?;
    let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a != b).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<NetFaults, SettingError> {
        let lookup = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| OsString::from(*v));
        NetFaults::read(Vars::from_lookup(&lookup))
    }

    fn placement(hosts: &[&str]) -> Placement {
        let entries: Vec<(usize, String)> = hosts.iter().map(|h| (1, h.to_string())).collect();
        Placement::of(&entries)
    }

    #[test]
    fn nothing_set_injects_nothing() {
        assert_eq!(read(&[]).unwrap(), NetFaults::default());
        assert_eq!(read(&[("GRAPPE_NET_DELAY_US", "0")]).unwrap(), NetFaults::default());
    }

    #[test]
    fn delay_and_rate_make_the_shaping() {
        let faults = read(&[("GRAPPE_NET_DELAY_US", "2000"), ("GRAPPE_NET_BANDWIDTH", "125M")]).unwrap();
        let shaping = Shaping { delay: Duration::from_millis(2), rate: NonZeroU64::new(125_000_000) };
        assert_eq!(faults.shaping, Some(shaping));
        for (text, rate) in [("1G", 1_000_000_000), ("64k", 64_000), (" 1000 ", 1000), ("3K", 3000)] {
            let faults = read(&[("GRAPPE_NET_BANDWIDTH", text)]).unwrap();
            assert_eq!(faults.shaping.unwrap().rate, NonZeroU64::new(rate), "{text}");
            assert_eq!(faults.shaping.unwrap().delay, Duration::ZERO);
        }
    }

    #[test]
    fn bad_values_are_refused_naming_the_variable_and_value() {
        for (var, value) in [
            ("GRAPPE_NET_BANDWIDTH", "0"),
            ("GRAPPE_NET_BANDWIDTH", "fast"),
            ("GRAPPE_NET_BANDWIDTH", "10T"),
            ("GRAPPE_NET_BANDWIDTH", "99999999999999G"),
            ("GRAPPE_NET_DELAY_US", "-1"),
            ("GRAPPE_NET_DELAY_US", "2ms"),
            ("GRAPPE_NET_DELAY_US", "60000001"),
            ("GRAPPE_NET_DROP_AFTER_MS", "soon"),
        ] {
            let error = read(&[(var, value)]).unwrap_err();
            assert_eq!(error.var, var);
            assert!(error.to_string().starts_with(&format!("{var}=\"{value}\": expected ")), "{error}");
        }
        let error = read(&[("GRAPPE_NET_BANDWIDTH", "0")]).unwrap_err();
        assert!(error.to_string().contains("bytes per second"), "{error}");
        for value in ["3", "2-2", "a-b", "1-2-3"] {
            let error = read(&[("GRAPPE_NET_DROP_AFTER_MS", "10"), ("GRAPPE_NET_DROP_LINK", value)]).unwrap_err();
            assert_eq!(error.to_string(), format!("GRAPPE_NET_DROP_LINK=\"{value}\": expected {LINK_EXPECTED}"));
        }
    }

    #[test]
    fn a_link_to_drop_needs_a_time_and_two_ranks_of_different_hosts() {
        let error = read(&[("GRAPPE_NET_DROP_LINK", "0-1")]).unwrap_err();
        assert!(error.to_string().contains("GRAPPE_NET_DROP_AFTER_MS"), "{error}");

        let faults = read(&[("GRAPPE_NET_DROP_AFTER_MS", "500"), ("GRAPPE_NET_DROP_LINK", "2-0")]).unwrap();
        assert_eq!(faults.drop, Some(LinkDrop { after: Duration::from_millis(500), between: Some((2, 0)) }));
        let hosts = placement(&["a", "a", "b"]);
        faults.check(&hosts).unwrap();
        assert!(faults.cuts(0, 2) && faults.cuts(2, 0));
        assert!(!faults.cuts(1, 2) && !faults.cuts(0, 1));

        let same = read(&[("GRAPPE_NET_DROP_AFTER_MS", "5"), ("GRAPPE_NET_DROP_LINK", "0-1")]).unwrap();
        let error = same.check(&hosts).unwrap_err();
        assert!(error.to_string().contains("ranks 0 and 1 both run on host a"), "{error}");
        let outside = read(&[("GRAPPE_NET_DROP_AFTER_MS", "5"), ("GRAPPE_NET_DROP_LINK", "0-3")]).unwrap();
        let error = outside.check(&hosts).unwrap_err();
        assert!(error.to_string().contains("among the job's 3 ranks"), "{error}");
    }

    #[test]
    fn without_a_link_named_every_link_is_cut() {
        let faults = read(&[("GRAPPE_NET_DROP_AFTER_MS", "0")]).unwrap();
        assert_eq!(faults.drop, Some(LinkDrop { after: Duration::ZERO, between: None }));
        faults.check(&placement(&["a", "b"])).unwrap();
        assert!(faults.cuts(0, 1) && faults.cuts(5, 3));
        assert!(!read(&[]).unwrap().cuts(0, 1));
    }
}
