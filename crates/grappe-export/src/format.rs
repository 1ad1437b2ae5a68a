//! The formats `grappe trace export` writes, by name, and how each is
//! written: a byte stream by one function, or an OTF2 archive. Every
//! format is a module of this crate; this list is the one place that
//! names them all.

use std::io::Write;

use grappe_analysis::{CausalStream, Result};

use crate::summary::ExportSummary;
use crate::{chrome, paje, perfetto, picl};

/// A format an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Chrome trace-event JSON ([`chrome`]).
    Chrome,
    /// Perfetto's protobuf trace format ([`perfetto`]).
    Perfetto,
    /// The Pajé trace format ([`paje`]).
    Paje,
    /// An OTF2 archive (module `otf2`, cargo feature `otf2`).
    Otf2,
    /// "New" PICL records ([`picl`]).
    Picl,
}

/// An exporter that writes one byte stream: it reads the stream once,
/// writes to `out` and calls `progress` with the events read now and then.
pub type StreamExporter =
    fn(stream: CausalStream, out: &mut (dyn Write + Send), progress: &mut dyn FnMut(u64)) -> Result<ExportSummary>;

/// How a format is written.
#[derive(Debug, Clone, Copy)]
pub enum Writer {
    /// As one byte stream, by this exporter.
    Stream(StreamExporter),
    /// As an OTF2 archive, a directory and its anchor file
    /// ([`otf2::write_otf2`](crate::otf2::write_otf2)).
    #[cfg(feature = "otf2")]
    Otf2Archive,
}

/// A format this build of grappe cannot write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unavailable {
    /// OTF2 was left out of the build (cargo feature `otf2`).
    #[error(
        "this grappe was built without OTF2 (the cargo feature `otf2` of grappe-cli, on by default, was left out): \
         install the OTF2 library, 3.0 or later (Debian/Ubuntu: apt-get install libopen-trace-format2-dev \
         pkg-config; scripts/install-deps does it), then build grappe with its default features \
         (cargo build --release -p grappe-cli)"
    )]
    Otf2,
}

impl Format {
    /// Every format, in the order they are listed to users.
    pub const ALL: [Format; 5] = [Format::Chrome, Format::Perfetto, Format::Paje, Format::Otf2, Format::Picl];

    /// Its name on the command line (`chrome`, `perfetto`, `paje`, `otf2`,
    /// `picl`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Chrome => "chrome",
            Format::Perfetto => "perfetto",
            Format::Paje => "paje",
            Format::Otf2 => "otf2",
            Format::Picl => "picl",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// What it is for, in a few words: its viewers and what to open.
    pub fn purpose(self) -> &'static str {
        match self {
            Format::Chrome => "trace-event JSON: open it in https://ui.perfetto.dev or chrome://tracing",
            Format::Perfetto => {
                "Perfetto's protobuf trace (.pftrace): open it in https://ui.perfetto.dev or trace_processor; \
                 under half the JSON's size, and read a packet at a time; call sites always in"
            }
            Format::Paje => "ViTE, pajeng",
            Format::Otf2 => "Vampir, Score-P tools: OUTPUT names the archive, OUTPUT.otf2 is the anchor file to open",
            Format::Picl => "ParaGraph",
        }
    }

    /// Whether it can give each call its source location (`--sites`; OTF2
    /// and Perfetto always do).
    pub fn has_sites_option(self) -> bool {
        matches!(self, Format::Chrome | Format::Paje)
    }

    /// How to write it, each call with its source location if `sites` (for
    /// the formats that have the option), or why this build cannot.
    pub fn writer(self, sites: bool) -> std::result::Result<Writer, Unavailable> {
        Ok(match self {
            Format::Chrome if sites => Writer::Stream(chrome::write_chrome_with_sites),
            Format::Chrome => Writer::Stream(chrome::write_chrome),
            Format::Paje if sites => Writer::Stream(paje::write_paje_with_sites),
            Format::Paje => Writer::Stream(paje::write_paje),
            Format::Perfetto => Writer::Stream(perfetto::write_perfetto),
            Format::Picl => Writer::Stream(picl::write_picl),
            Format::Otf2 => return otf2_writer(),
        })
    }
}

#[cfg(feature = "otf2")]
fn otf2_writer() -> std::result::Result<Writer, Unavailable> {
    Ok(Writer::Otf2Archive)
}

#[cfg(not(feature = "otf2"))]
fn otf2_writer() -> std::result::Result<Writer, Unavailable> {
    Err(Unavailable::Otf2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_found_by_its_name_and_only_chrome_and_paje_take_sites() {
        for format in Format::ALL {
            assert_eq!(Format::from_name(format.name()), Some(format));
        }
        assert_eq!(Format::from_name("vtf"), None);
        let with_sites: Vec<&str> =
            Format::ALL.into_iter().filter(|f| f.has_sites_option()).map(Format::name).collect();
        assert_eq!(with_sites, ["chrome", "paje"]);
    }

    #[cfg(feature = "otf2")]
    #[test]
    fn otf2_is_an_archive_in_a_build_with_it() {
        assert!(matches!(Format::Otf2.writer(false), Ok(Writer::Otf2Archive)));
    }

    #[cfg(not(feature = "otf2"))]
    #[test]
    fn otf2_says_how_to_get_it_in_a_build_without_it() {
        let why = Format::Otf2.writer(false).unwrap_err().to_string();
        assert!(why.starts_with("this grappe was built without OTF2"), "{why}");
        assert!(why.contains("libopen-trace-format2-dev") && why.contains("default features"), "{why}");
    }
}
