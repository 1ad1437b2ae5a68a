//! Times on the command line: `1.5s`, `250ms`, `40us` (or `µs`), `800ns`,
//! `2m`, `1h`; a bare number is in seconds. Written here because the usual
//! parser (humantime) takes no decimals, and `0.25s` is how a Vampir user
//! reads a time axis.

use std::time::Duration;

/// What every message shows of the syntax.
const EXAMPLES: &str = "a time like 1.5s, 250ms, 40us, 800ns or 2m (bare numbers are seconds)";

/// The seconds `text` says, zero or more.
pub fn parse_seconds(text: &str) -> Result<f64, String> {
    let at = text.find(|c: char| c.is_alphabetic()).unwrap_or(text.len());
    let (number, unit) = text.split_at(at);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("{text:?}: unknown unit {other:?}; expected {EXAMPLES}")),
    };
    match number.trim().parse::<f64>() {
        // A year is long enough for any run, and far from overflows.
        Ok(v) if v >= 0.0 && v * scale <= 366.0 * 86_400.0 => Ok(v * scale),
        Ok(v) if v < 0.0 => Err(format!("{text:?}: a time cannot be negative; expected {EXAMPLES}")),
        Ok(_) => Err(format!("{text:?}: longer than a year")),
        Err(_) => Err(format!("{text:?}: expected {EXAMPLES}")),
    }
}

/// A positive duration: a timeout, an interval between checkpoints.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    match parse_seconds(text)? {
        0.0 => Err(format!("{text:?}: expected a positive time like 30s, 500ms or 2m")),
        seconds => Ok(Duration::from_secs_f64(seconds)),
    }
}

/// A date from the start of the run, in ns.
pub fn parse_offset_ns(text: &str) -> Result<u64, String> {
    parse_seconds(text).map(|s| (s * 1e9).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_decimals_and_units() {
        let cases = [("1.5s", 1_500_000_000), ("250ms", 250_000_000), ("40us", 40_000), ("40µs", 40_000)];
        for (text, ns) in cases {
            assert_eq!(parse_offset_ns(text), Ok(ns), "{text}");
        }
        assert_eq!(parse_offset_ns(" 0.25s "), Ok(250_000_000));
        assert_eq!(parse_offset_ns("800ns"), Ok(800));
        assert_eq!(parse_offset_ns("2"), Ok(2_000_000_000));
        assert_eq!(parse_offset_ns("0ms"), Ok(0));
        assert_eq!(parse_seconds("2m"), Ok(120.0));
        for (text, said) in [
            ("5 parsecs", "unknown unit \"parsecs\""),
            ("1.2.3ms", "expected a time like"),
            ("ms", "expected a time like"),
            ("-1ms", "cannot be negative"),
            ("1e300s", "unknown unit"),
            ("400d", "unknown unit"),
            ("9000h", "longer than a year"),
        ] {
            let error = parse_seconds(text).expect_err(text);
            assert!(error.contains(said) && error.contains(text.trim()), "{text}: {error}");
        }
    }

    #[test]
    fn durations_are_positive() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["", "0s", "-1s", "soon", "3 parsecs"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }
}
