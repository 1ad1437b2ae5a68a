//! The HTML page: a template with slots, the sections written here
//! (header, global time, check, notes) and the data the scripts draw
//! from, embedded as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use grappe_analysis::profile::Profile;
use grappe_analysis::set::list_ranks;
use grappe_analysis::{CheckReport, GlobalTime, Layout, TraceSet};

use super::data::Data;
use super::diagram::Diagram;

const TEMPLATE: &str = include_str!("page.html");
const STYLE: &str = include_str!("style.css");
const SCRIPTS: [&str; 6] = [
    include_str!("summary.js"),
    include_str!("diagram.js"),
    include_str!("overview.js"),
    include_str!("tables.js"),
    include_str!("selftest.js"),
    include_str!("main.js"),
];

/// What the page shows.
pub(crate) struct Page<'a> {
    pub set: &'a TraceSet,
    pub time: &'a GlobalTime,
    pub check: &'a CheckReport,
    pub profile: &'a Profile,
    pub diagram: &'a Diagram<'a>,
    /// What the diagram embeds, one sentence each.
    pub embedded: &'a [String],
}

impl Page<'_> {
    /// Writes the page to `w`.
    pub fn render(&self, w: &mut dyn Write) -> io::Result<()> {
        let mut rest = TEMPLATE;
        while let Some(open) = rest.find("{{") {
            w.write_all(&rest.as_bytes()[..open])?;
            let after = &rest[open + 2..];
            let close = after.find("}}").unwrap_or(after.len());
            self.slot(&after[..close], w)?;
            rest = after.get(close + 2..).unwrap_or("");
        }
        w.write_all(rest.as_bytes())
    }

    fn slot(&self, name: &str, w: &mut dyn Write) -> io::Result<()> {
        match name {
            "title" => w.write_all(escape(&format!("grappe report: {}", self.set.location().display())).as_bytes()),
            "style" => w.write_all(STYLE.as_bytes()),
            "header" => w.write_all(self.header().as_bytes()),
            "embedded" => w.write_all(self.embedded().as_bytes()),
            "profile_text" => w.write_all(escape(&self.profile.to_string()).as_bytes()),
            "clock" => w.write_all(self.clock().as_bytes()),
            "check" => w.write_all(self.check().as_bytes()),
            "data" => {
                let data = Data::new(self.set.world_size(), self.diagram, self.profile);
                serde_json::to_writer(ScriptSafe(w), &data).map_err(io::Error::other)
            }
            "script" => SCRIPTS.iter().try_for_each(|s| w.write_all(s.as_bytes())),
            _ => Ok(()),
        }
    }

    fn header(&self) -> String {
        let (set, check, profile) = (self.set, self.check, self.profile);
        let mut h = format!(
            "<h1>grappe report <span class=\"where\">{}</span></h1>\n",
            escape(&set.location().display().to_string())
        );
        h.push_str("<dl class=\"facts\">\n");
        let traced = set.world_size() as usize - set.missing_ranks().len();
        let layout = match set.layout() {
            Layout::PerRank => "one file per rank",
            Layout::Merged => "one merged file",
        };
        fact(&mut h, "Ranks", &format!("{} ({traced} traced)", set.world_size()));
        let job = &set.files()[0].header.job;
        if !job.is_empty() {
            fact(&mut h, "Job", &escape(job));
        }
        fact(&mut h, "Hosts", &self.hosts());
        fact(&mut h, "Events", &grouped(check.events));
        fact(&mut h, "Messages", &format!("{} matched", grouped(check.messages)));
        let events = self.diagram.end;
        fact(
            &mut h,
            "Run",
            &format!(
                "{} <span class=\"what\">from the end of init to the start of finalize (the program's time, as mpiP's AppTime; the profile's percentages are of it)</span>",
                duration(profile.span_ns)
            ),
        );
        fact(
            &mut h,
            "Trace span",
            &format!(
                "{} <span class=\"what\">from the first event to the last (the diagram's time axis: init and finalize included, they hold the clock sampling)</span>",
                duration(events)
            ),
        );
        fact(&mut h, "Trace", &format!("{}, {}", escape(&set.location().display().to_string()), layout));
        let problems = check.problems().len();
        let state = if problems == 0 { "consistent".to_owned() } else { format!("{problems} kinds of problems") };
        let _ = writeln!(h, "<div><dt>Check</dt><dd><a href=\"#check\">{state}</a></dd></div>");
        h.push_str("</dl>\n");
        let notes: Vec<&String> = set.notes().iter().chain(&self.time.notes).chain(&profile.notes).collect();
        list(&mut h, "notes", notes.iter().map(|n| n.as_str()));
        h
    }

    /// "host (ranks 0-3)" for every host.
    fn hosts(&self) -> String {
        let mut hosts: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for f in self.set.files() {
            hosts.entry(f.header.host.as_str()).or_default().extend(f.rank());
        }
        let described: Vec<String> = hosts
            .iter()
            .map(|(host, ranks)| match ranks.is_empty() {
                true => escape(host),
                false => format!("{} (ranks {})", escape(host), list_ranks(ranks)),
            })
            .collect();
        described.join(", ")
    }

    fn embedded(&self) -> String {
        let mut h = String::from("<div id=\"embedded\">");
        for sentence in self.embedded {
            let _ = writeln!(h, "<p class=\"embedded\">{}</p>", escape(sentence));
        }
        h + "</div>"
    }

    fn clock(&self) -> String {
        let time = self.time;
        let mut h = String::from("<h2 id=\"clock\">Global time</h2>\n");
        let _ = writeln!(h, "<p>Clock estimation: {}.</p>", escape(&time.estimation));
        if self.set.layout() == Layout::Merged {
            h.push_str("<p>A merged trace: its dates are global already.</p>\n");
        }
        h.push_str("<table class=\"data\"><thead><tr><th>Rank</th><th>Host</th><th>Clock</th><th>Basis</th>");
        h.push_str("<th>Model offset (ns)</th><th>Model drift (ppm)</th></tr></thead><tbody>\n");
        for rank in time.ranks.iter().flatten() {
            let (host, clock) = self.set.host_and_clock(rank.rank).unwrap_or_default();
            let (host, clock) = (escape(host), escape(clock));
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{host}</td><td>{clock}</td><td>{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.3}</td></tr>",
                rank.rank,
                escape(&rank.basis.describe()),
                rank.model.offset_ns,
                rank.model.drift * 1e6
            );
        }
        h.push_str("</tbody></table>\n");
        match &time.report {
            Some(report) => {
                let _ = writeln!(h, "<pre class=\"clock\">{}</pre>", escape(&report.to_string()));
                let warnings: Vec<String> = report.warnings.iter().map(|w| w.to_string()).collect();
                list(&mut h, "warnings", warnings.iter().map(String::as_str));
            }
            None => h.push_str("<p>No rank needed an estimated clock: no clock statistics.</p>\n"),
        }
        list(&mut h, "notes", time.notes.iter().map(String::as_str));
        h
    }

    fn check(&self) -> String {
        let c = self.check;
        let mut h = String::from("<h2 id=\"check\">Consistency check</h2>\n<table class=\"kv\"><tbody>\n");
        let disorder: u64 = c.stream.flows.iter().map(|f| f.disorder).sum();
        let gap = c.min_gap_ns.map_or("-".to_owned(), |g| format!("{g} ns"));
        let untraced = format!("{} / {}", grouped(c.receives_from_untraced), grouped(c.sends_to_untraced));
        let rows: [(&str, String); 13] = [
            ("Events read", grouped(c.events)),
            ("Messages matched", grouped(c.messages)),
            ("Tachyons (receive dated before its send)", grouped(c.tachyons)),
            ("Smallest receive end minus send start", gap),
            ("Size mismatches", grouped(c.size_mismatches)),
            ("Receives with no send", grouped(c.unmatched_receives)),
            ("Sends never received", grouped(c.unreceived_sends)),
            ("Receives from / sends to ranks with no trace (not checked)", untraced),
            ("Receives deferred behind their send in the merge", grouped(c.stream.deferred)),
            ("Receives forced out of a wait cycle", grouped(c.stream.forced)),
            ("Records out of order", grouped(disorder)),
            ("Files cut or unfinished", c.unfinished.len().to_string()),
            ("Calls failed: a peer died or the job was stopped (not a problem)", grouped(c.failed_calls)),
        ];
        for (name, value) in rows {
            let _ = writeln!(h, "<tr><th>{name}</th><td class=\"n\">{value}</td></tr>");
        }
        h.push_str("</tbody></table>\n");
        let problems = c.problems();
        if problems.is_empty() {
            h.push_str("<p class=\"ok\">Consistent: no tachyon, every message matched, every rank in order.</p>\n");
        }
        list(&mut h, "problems", problems.iter().map(String::as_str));
        let _ =
            writeln!(h, "<details><summary>Full check report</summary><pre>{}</pre></details>", escape(&c.to_string()));
        h
    }
}

fn fact(h: &mut String, name: &str, value_html: &str) {
    let _ = writeln!(h, "<div><dt>{name}</dt><dd>{value_html}</dd></div>");
}

fn list<'a>(h: &mut String, class: &str, items: impl Iterator<Item = &'a str>) {
    let items: Vec<String> = items.map(|i| format!("<li>{}</li>", escape(i))).collect();
    if !items.is_empty() {
        let _ = writeln!(h, "<ul class=\"{class}\">{}</ul>", items.concat());
    }
}

/// A duration in the unit that fits it: `146.103 s`, `2.500 ms`, `40 ns`.
pub(crate) fn duration(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..1_000_000 => format!("{:.3} µs", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.3} ms", ns as f64 / 1e6),
        _ => format!("{:.3} s", ns as f64 / 1e9),
    }
}

/// `12 345 678`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('\u{202f}');
        }
        out.push(c);
    }
    out
}

/// Text made safe for HTML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Writes JSON safe inside a `<script>` element: every `<` (only ever in
/// strings) becomes `\u003c`, so no `</script>` or `<!--` can appear.
struct ScriptSafe<'a>(&'a mut dyn Write);

impl Write for ScriptSafe<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut from = 0;
        for (i, _) in buf.iter().enumerate().filter(|(_, b)| **b == b'<') {
            self.0.write_all(&buf[from..i])?;
            self.0.write_all(b"\\u003c")?;
            from = i + 1;
        }
        self.0.write_all(&buf[from..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_in_a_script_cannot_close_it() {
        let mut out = Vec::new();
        serde_json::to_writer(ScriptSafe(&mut out), &["</script><!-- <b>"]).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains('<'), "{text}");
        let back: Vec<String> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ["</script><!-- <b>"]);
        assert_eq!(escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
        assert_eq!(grouped(1234567), "1\u{202f}234\u{202f}567");
    }

    #[test]
    fn the_assets_cannot_end_their_element_early_and_fill_every_slot() {
        for asset in SCRIPTS.iter().chain([&STYLE]) {
            let lower = asset.to_ascii_lowercase();
            assert!(!lower.contains("</script") && !lower.contains("</style") && !lower.contains("<!--"));
        }
        for slot in ["title", "style", "header", "embedded", "profile_text", "clock", "check", "data", "script"] {
            assert!(TEMPLATE.contains(&format!("{{{{{slot}}}}}")), "{slot}");
        }
    }
}
