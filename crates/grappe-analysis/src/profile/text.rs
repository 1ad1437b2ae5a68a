//! The profile as text tables, laid out like mpiP's report.

use std::fmt;

use super::tables::{CallStats, Profile, SizeBin};

/// Rows printed at most in the long tables (the JSON has them all).
const ROWS: usize = 40;
/// Ranks up to which the matrix is printed as a square.
const SQUARE: usize = 16;

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

fn section(f: &mut fmt::Formatter<'_>, title: &str) -> fmt::Result {
    writeln!(f, "---------------------------------------------------------------------------")?;
    writeln!(f, "@--- {title} ---")?;
    writeln!(f, "---------------------------------------------------------------------------")
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "@ grappe profile (mpiP-style)")?;
        writeln!(
            f,
            "@ Ranks: {} of {} with events; events: {}; run: {:.3} ms (end of init to start of finalize, as mpiP's AppTime); aggregate: {:.3} ms",
            self.ranks.len(),
            self.world_size,
            self.events,
            ms(self.span_ns),
            ms(self.aggregate_ns)
        )?;
        self.write_ranks(f)?;
        self.write_calls(f)?;
        self.write_sites(f)?;
        write_sizes(f, "Message sizes: point-to-point messages sent", &self.p2p_sizes)?;
        write_sizes(f, "Message sizes: collective calls, bytes contributed", &self.collective_sizes)?;
        self.write_matrix(f)?;
        self.write_regions(f)?;
        for note in &self.notes {
            writeln!(f, "@ note: {note}")?;
        }
        Ok(())
    }
}

impl Profile {
    fn write_ranks(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        section(f, "Time per rank (ms; %: of the rank's total)")?;
        writeln!(
            f,
            "@ Waiting: late sender (receive before its send started), collective entered before the last rank"
        )?;
        writeln!(
            f,
            "{:>6} {:>12} {:>12} {:>7} {:>12} {:>7} {:>12} {:>7} {:>12} {:>7}",
            "Rank", "Total", "Calls", "Calls%", "Waiting", "Wait%", "Comm", "Comm%", "Compute", "Comp%"
        )?;
        for r in &self.ranks {
            writeln!(
                f,
                "{:>6} {:>12.3} {:>12.3} {:>7.2} {:>12.3} {:>7.2} {:>12.3} {:>7.2} {:>12.3} {:>7.2}",
                r.rank,
                ms(r.total_ns),
                ms(r.calls_ns),
                r.pct(r.calls_ns),
                ms(r.waiting_ns),
                r.pct(r.waiting_ns),
                ms(r.communication_ns),
                r.pct(r.communication_ns),
                ms(r.compute_ns),
                r.pct(r.compute_ns)
            )?;
        }
        Ok(())
    }

    fn write_calls(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        section(f, "Calls by type (Run%: of the aggregate run time; Calls%: of the time in calls)")?;
        writeln!(f, "{:<22} {}", "Call", STATS_HEADER)?;
        let in_calls = self.calls.iter().fold(0u64, |a, c| a.saturating_add(c.stats.total_ns));
        for c in &self.calls {
            writeln!(f, "{:<22} {}", c.call.name(), self.stats(&c.stats, in_calls))?;
        }
        Ok(())
    }

    fn write_sites(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        section(f, "Call sites: call type x source location of the call, in its innermost enclosing user region")?;
        let rows: Vec<(String, &str)> = self
            .sites
            .iter()
            .take(ROWS)
            .map(|s| {
                let site = s.site.as_deref().map_or("<runtime>".to_owned(), short_path);
                (site, s.region.as_deref().unwrap_or("<no region>"))
            })
            .collect();
        let site_w = column_width(34, rows.iter().map(|(site, _)| site.as_str()));
        let region_w = column_width(16, rows.iter().map(|(_, region)| *region));
        writeln!(f, "{:>4} {:<14} {:<site_w$} {:<region_w$} {}", "Site", "Call", "Location", "Region", STATS_HEADER)?;
        let in_calls = self.sites.iter().fold(0u64, |a, s| a.saturating_add(s.stats.total_ns));
        for (i, (s, (site, region))) in self.sites.iter().zip(&rows).enumerate() {
            let stats = self.stats(&s.stats, in_calls);
            writeln!(f, "{:>4} {:<14} {site:<site_w$} {region:<region_w$} {stats}", i + 1, s.call.name())?;
        }
        if self.sites.len() > ROWS {
            writeln!(f, "... {} more sites", self.sites.len() - ROWS)?;
        }
        Ok(())
    }

    fn stats(&self, s: &CallStats, in_calls: u64) -> String {
        let of_calls = if in_calls == 0 { 0.0 } else { 100.0 * s.total_ns as f64 / in_calls as f64 };
        format!(
            "{:>10} {:>12.3} {:>10.3} {:>10.3} {:>10.3} {:>7.2} {:>7.2} {:>14}",
            s.count,
            ms(s.total_ns),
            us(s.mean_ns()),
            us(s.min_ns as f64),
            us(s.max_ns as f64),
            self.pct_of_run(s.total_ns),
            of_calls,
            s.bytes
        )
    }

    fn write_matrix(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        section(f, "Communication matrix: messages (bytes), sender rows x receiver columns")?;
        let n = self.world_size as usize;
        if n > SQUARE || n == 0 {
            writeln!(f, "{:>6} {:>6} {:>12} {:>16}", "Src", "Dst", "Messages", "Bytes")?;
            let mut cells: Vec<_> = self.matrix.iter().collect();
            cells.sort_by_key(|c| std::cmp::Reverse(c.bytes));
            for c in cells.iter().take(ROWS) {
                writeln!(f, "{:>6} {:>6} {:>12} {:>16}", c.src, c.dst, c.messages, c.bytes)?;
            }
            return Ok(());
        }
        write!(f, "{:>6}", "")?;
        (0..n).try_for_each(|d| write!(f, " {:>18}", format!("-> {d}")))?;
        writeln!(f)?;
        for src in 0..n as u32 {
            write!(f, "{src:>6}")?;
            for dst in 0..n as u32 {
                let (m, b) = self.messages(src, dst);
                write!(f, " {:>18}", if m == 0 { "-".to_owned() } else { format!("{m} ({b})") })?;
            }
            writeln!(f)?;
        }
        Ok(())
    }

    fn write_regions(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        section(f, "User regions by inclusive time (all ranks)")?;
        let shown = &self.regions[..self.regions.len().min(ROWS)];
        let locations: Vec<String> = shown.iter().map(|r| short_path(&r.location)).collect();
        let name_w = column_width(24, shown.iter().map(|r| r.name.as_str()));
        let location_w = column_width(28, locations.iter().map(String::as_str));
        writeln!(
            f,
            "{:<name_w$} {:<location_w$} {:>10} {:>12} {:>10} {:>7}",
            "Region", "Location", "Count", "Incl(ms)", "Mean(us)", "Run%"
        )?;
        for (r, location) in shown.iter().zip(&locations) {
            let mean = if r.count == 0 { 0.0 } else { r.inclusive_ns as f64 / r.count as f64 };
            writeln!(
                f,
                "{:<name_w$} {location:<location_w$} {:>10} {:>12.3} {:>10.3} {:>7.2}",
                r.name,
                r.count,
                ms(r.inclusive_ns),
                us(mean),
                self.pct_of_run(r.inclusive_ns)
            )?;
        }
        if self.region_count > shown.len() {
            writeln!(f, "... {} more regions", self.region_count - shown.len())?;
        }
        Ok(())
    }
}

/// A column as wide as its widest text, and at least `min`: a long name
/// or path widens its column rather than pushing the rest of its row
/// out of line.
fn column_width<'a>(min: usize, texts: impl Iterator<Item = &'a str>) -> usize {
    texts.map(|t| t.chars().count()).fold(min, usize::max)
}

const STATS_HEADER: &str = "     Count    Total(ms)   Mean(us)    Min(us)    Max(us)    Run%  Calls%          Bytes";

fn write_sizes(f: &mut fmt::Formatter<'_>, title: &str, bins: &[SizeBin]) -> fmt::Result {
    section(f, title)?;
    writeln!(f, "{:>24} {:>12} {:>16}", "Bytes", "Count", "Total bytes")?;
    for b in bins {
        writeln!(f, "{:>24} {:>12} {:>16}", format!("{}-{}", b.min, b.max), b.count, b.bytes)?;
    }
    Ok(())
}

/// A source location with its path cut to the last two components
/// (`examples/jacobi.rs:88:17`), as mpiP prints file names: the table
/// stays readable; the JSON and the report keep the whole path.
fn short_path(location: &str) -> String {
    let mut parts = location.rsplitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(file), Some(dir), Some(_)) => format!("{dir}/{file}"),
        _ => location.to_owned(),
    }
}
