//! The byte buffer every export writes through: integers and decimal
//! dates by integer arithmetic (no float formatting, so a date reads back
//! as exactly the nanoseconds it was), escaped strings, and large writes
//! to the output.
//!
//! It is the Chrome export's hot path: an event is some twenty pieces. So
//! a record is written through a [`Cursor`] over a slice reserved for it
//! at once (one capacity check per record, positions in registers),
//! literal pieces are copied with their length known at compile time
//! (inlined moves, no `memcpy` call), integers are put together eight
//! digits at a time in a register and stored as one word (no branch on
//! their length), and fractions three digits per lookup.
//!
//! The buffer is aligned and handed out in whole blocks, so that a
//! [`grappe_direct::DirectWriter`] takes it to the device without a copy;
//! any other output takes the same bytes. A sink is made by [`with_sink`]:
//! a thread of its own writes each full buffer while the next one is
//! filled ([`grappe_direct::write_behind`]).

use std::io::Write;

use grappe_analysis::{AnalysisError, Result};
use grappe_direct::{ALIGN, AlignedBuf, Behind};

/// The buffer: two huge pages (see `grappe_direct::AlignedBuf`).
const BUFFER: usize = 4 << 20;

/// Bytes gathered before one write to the output: long transfers (an
/// `O_DIRECT` file on this VM takes 1.6 GB/s in writes of 4 MiB, 1.1 GB/s
/// in writes of 1 MiB), and room left in the buffer for the records that
/// go past it.
const CHUNK: usize = BUFFER - 64 * 1024;

/// Room for a record's fixed parts: its literals and up to sixteen
/// numbers. Strings and lists need more ([`text_room`]).
pub(crate) const RECORD_ROOM: usize = 512;

/// Room for a number written by a cursor: a sign and the 20 digits of the
/// longest `u64` (the last eight of them stored as one word).
pub(crate) const NUMBER_ROOM: usize = 21;

/// Two-digit decimal table: `DIGITS[2n..2n + 2]` is `n` for n < 100.
const DIGITS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

const E8: u64 = 100_000_000;
const E16: u64 = E8 * E8;

/// Added to digit values (0 to 9, one per byte) to make them characters:
/// no byte carries into the next.
const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;

/// The eight digit values of `v` (< 10^8), zero-padded, one per byte in
/// memory order. The number's leading zeros are the word's low zero
/// bytes, which `trailing_zeros` counts.
///
/// Lanes of one word are divided at once (SWAR): the two halves of four
/// digits in 32-bit lanes by 100, then the four pairs in 16-bit lanes by
/// 10, each division a multiplication by a reciprocal and a shift, exact
/// for the lane's range (`x * 10486 >> 20` is `x / 100` below 10^4, `x *
/// 103 >> 10` is `x / 10` below 100; a test checks every value). Five
/// multiplications and no table, where a table of pairs took eight and
/// four loads.
#[inline(always)]
fn digit_values(v: u64) -> u64 {
    const LANES_32: u64 = 0x0000_007f_0000_007f;
    const LANES_16: u64 = 0x000f_000f_000f_000f;
    // [first four digits | last four], the first in the low lane.
    let fours = (v / 10_000) | ((v % 10_000) << 32);
    let hundreds = ((fours * 10_486) >> 20) & LANES_32;
    // [pair 1 | pair 2 | pair 3 | pair 4] in 16-bit lanes.
    let pairs = hundreds | ((fours - hundreds * 100) << 16);
    let tens = ((pairs * 103) >> 10) & LANES_16;
    tens | ((pairs - tens * 10) << 8)
}

/// `TRIPLES[n]` is a dot and the three digits of `n`, for n < 1000.
const TRIPLES: [[u8; 4]; 1000] = {
    let mut table = [[0u8; 4]; 1000];
    let mut n = 0;
    while n < 1000 {
        table[n] = [b'.', b'0' + (n / 100) as u8, b'0' + (n / 10 % 10) as u8, b'0' + (n % 10) as u8];
        n += 1;
    }
    table
};

/// Room for `s` written as a JSON or quoted string (each byte escaped to
/// at most six).
pub(crate) fn text_room(s: &str) -> usize {
    6 * s.len() + 16
}

/// Runs `write` with a sink whose full buffers a thread of their own
/// writes to `out`. `what` names the output in errors.
pub(crate) fn with_sink<R>(
    out: &mut (dyn Write + Send),
    what: &'static str,
    write: impl FnOnce(Sink) -> Result<R>,
) -> Result<R> {
    grappe_direct::write_behind(out, |behind| write(Sink::behind(behind, what)?))
        .map_err(|source| AnalysisError::io(what, source))?
}

/// A buffered output that counts what it wrote.
pub(crate) struct Sink<'a> {
    /// Storage; `buf[..pos]` is written, not yet handed to `out`.
    buf: AlignedBuf,
    pos: usize,
    /// The writer thread: takes full buffers, gives empty ones.
    behind: &'a mut Behind,
    written: u64,
    /// Names the output in errors.
    what: &'static str,
}

impl<'a> Sink<'a> {
    fn behind(behind: &'a mut Behind, what: &'static str) -> Result<Self> {
        let buf = behind.empty(BUFFER).map_err(|source| AnalysisError::io(what, source))?;
        Ok(Sink { buf, pos: 0, behind, written: 0, what })
    }

    /// A cursor for one record of at most `room` bytes (an unusually long
    /// one grows the buffer; the next flush writes it all).
    #[inline(always)]
    pub(crate) fn record(&mut self, room: usize) -> Cursor<'_> {
        if self.pos + room > self.buf.len() {
            self.grow(room);
        }
        let start = self.pos;
        Cursor { out: &mut self.buf.bytes_mut()[start..start + room], at: 0, pos: &mut self.pos }
    }

    #[cold]
    fn grow(&mut self, room: usize) {
        let len = (self.pos + room).max(2 * self.buf.len());
        self.buf.grow(len);
    }

    /// Writes literal bytes (of any length).
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.record(b.len()).bytes(b);
    }

    /// Hands the buffer's whole blocks to the output once it is large
    /// enough; the partial last block moves to the front.
    #[inline]
    pub(crate) fn maybe_flush(&mut self) -> Result<()> {
        if self.pos >= CHUNK { self.flush_blocks() } else { Ok(()) }
    }

    /// Hands the whole blocks to the writer; the partial last one starts
    /// the next buffer.
    fn flush_blocks(&mut self) -> Result<()> {
        let whole = self.pos / ALIGN * ALIGN;
        let tail = whole..self.pos;
        let mut next = self.behind.empty(self.buf.len()).map_err(|e| AnalysisError::io(self.what, e))?;
        next.bytes_mut()[..tail.len()].copy_from_slice(&self.buf.bytes()[tail]);
        let full = std::mem::replace(&mut self.buf, next);
        self.behind.write(full, whole).map_err(|e| AnalysisError::io(self.what, e))?;
        self.written += whole as u64;
        self.pos -= whole;
        Ok(())
    }

    /// Hands everything to the writer (which flushes the output once it
    /// has written it); the bytes written.
    pub(crate) fn finish(self) -> Result<u64> {
        let Sink { buf, pos, behind, written, what } = self;
        behind.write(buf, pos).map_err(|e| AnalysisError::io(what, e))?;
        Ok(written + pos as u64)
    }
}

/// Writes one record into the room reserved for it; what was written is
/// kept when the cursor is dropped.
pub(crate) struct Cursor<'s> {
    out: &'s mut [u8],
    at: usize,
    pos: &'s mut usize,
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        *self.pos += self.at;
    }
}

impl Cursor<'_> {
    #[inline(always)]
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.out[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }

    /// Writes `message` as protobuf, after its length (a varint).
    #[inline]
    pub(crate) fn length_delimited(&mut self, message: &impl prost::Message) {
        let mut out = &mut self.out[self.at..];
        let room = out.len();
        message.encode_length_delimited(&mut out).expect("the record's room holds the message and its length");
        self.at += room - out.len();
    }

    #[inline(always)]
    pub(crate) fn byte(&mut self, b: u8) {
        self.out[self.at] = b;
        self.at += 1;
    }

    #[inline(always)]
    pub(crate) fn uint(&mut self, v: u64) {
        // Most numbers (ranks, tags, communicators, short durations) are
        // one or two digits.
        if v < 10 {
            self.byte(b'0' + v as u8);
            return;
        }
        if v < 100 {
            let pair = v as usize * 2;
            self.bytes(&DIGITS[pair..pair + 2]);
            return;
        }
        // Digits are put together in a register and stored eight bytes at
        // a time (within the NUMBER_ROOM every number has; bytes past the
        // number are overwritten by what follows). Digits stored a pair at
        // a time into a scratch array and copied out whole were as many
        // instructions, but the copy's wide load waited on the narrow
        // stores before it (no store forwarding): a quarter of the Chrome
        // writer's time.
        if v < E8 {
            self.up_to_eight(v);
        } else if v < E16 {
            self.up_to_eight(v / E8);
            self.eight(v % E8);
        } else {
            self.up_to_eight(v / E16);
            self.eight(v / E8 % E8);
            self.eight(v % E8);
        }
    }

    /// `v` (< 10^8, not 0) without leading zeros: its eight digits,
    /// shifted past the zeros (no branch on the length).
    #[inline(always)]
    fn up_to_eight(&mut self, v: u64) {
        let values = digit_values(v);
        let zeros = values.trailing_zeros() / 8;
        let word = (values + ASCII_ZEROS) >> (8 * zeros);
        self.out[self.at..self.at + 8].copy_from_slice(&word.to_le_bytes());
        self.at += 8 - zeros as usize;
    }

    /// `v` (< 10^8) as exactly eight digits, zero-padded.
    #[inline(always)]
    fn eight(&mut self, v: u64) {
        self.out[self.at..self.at + 8].copy_from_slice(&(digit_values(v) + ASCII_ZEROS).to_le_bytes());
        self.at += 8;
    }

    #[inline(always)]
    pub(crate) fn int(&mut self, v: i64) {
        if v < 0 {
            self.byte(b'-');
        }
        self.uint(v.unsigned_abs());
    }

    /// `value` / 10^`decimals`, written with all its decimals (`12345`, 3
    /// → `12.345`); `decimals` is 1 to 19.
    #[inline(always)]
    pub(crate) fn fixed(&mut self, value: u64, decimals: u32) {
        let unit = 10u64.pow(decimals);
        self.uint(value / unit);
        if decimals % 3 == 0 {
            self.fraction_by_triples(value % unit, decimals);
        } else {
            self.byte(b'.');
            self.digits(value % unit, decimals as usize);
        }
    }

    /// `.` and the `decimals` digits of `fraction` (< 10^`decimals`, a
    /// multiple of 3), three digits per table lookup: the dates of every
    /// export have 3 decimals (µs) or 9 (s).
    #[inline(always)]
    fn fraction_by_triples(&mut self, fraction: u64, decimals: u32) {
        let mut unit = 10u64.pow(decimals - 3);
        self.bytes(&TRIPLES[(fraction / unit) as usize]);
        while unit > 1 {
            let rest = fraction % unit;
            unit /= 1000;
            self.bytes(&TRIPLES[(rest / unit) as usize][1..]);
        }
    }

    /// The last `n` decimal digits of `v`, zero-padded.
    #[inline(always)]
    fn digits(&mut self, v: u64, n: usize) {
        let out = &mut self.out[self.at..self.at + n];
        let (mut rest, mut end) = (v, n);
        while end >= 2 {
            let pair = (rest % 100) as usize * 2;
            rest /= 100;
            end -= 2;
            out[end..end + 2].copy_from_slice(&DIGITS[pair..pair + 2]);
        }
        if end == 1 {
            out[0] = b'0' + (rest % 10) as u8;
        }
        self.at += n;
    }

    /// The date `t` relative to `origin` (negative before it), in units of
    /// 10^`decimals` ns: 3 for microseconds, 9 for seconds.
    #[inline(always)]
    pub(crate) fn date(&mut self, t: u64, origin: u64, decimals: u32) {
        if t >= origin {
            self.fixed(t - origin, decimals);
        } else {
            self.byte(b'-');
            self.fixed(origin - t, decimals);
        }
    }

    /// Bytes of a length known only at run time: up to 32 of them (names,
    /// locations) by two overlapping moves of a fixed size, where
    /// `copy_from_slice` called `memcpy` (25 instructions a name).
    #[inline(always)]
    fn short_bytes(&mut self, b: &[u8]) {
        let n = b.len();
        let out = &mut self.out[self.at..self.at + n];
        match n {
            16..=32 => {
                out[..16].copy_from_slice(&b[..16]);
                out[n - 16..].copy_from_slice(&b[n - 16..]);
            }
            8..=15 => {
                out[..8].copy_from_slice(&b[..8]);
                out[n - 8..].copy_from_slice(&b[n - 8..]);
            }
            4..=7 => {
                out[..4].copy_from_slice(&b[..4]);
                out[n - 4..].copy_from_slice(&b[n - 4..]);
            }
            _ => out.copy_from_slice(b),
        }
        self.at += n;
    }

    /// A JSON string literal, quotes included (room: [`text_room`]).
    pub(crate) fn json_str(&mut self, s: &str) {
        self.byte(b'"');
        let bytes = s.as_bytes();
        if json_plain(bytes) {
            self.short_bytes(bytes);
            self.byte(b'"');
            return;
        }
        let mut plain = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let escape: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0..=0x1f => b"",
                _ => continue,
            };
            self.bytes(&bytes[plain..i]);
            plain = i + 1;
            if escape.is_empty() {
                self.bytes(b"\\u00");
                self.bytes(&[hex(b >> 4), hex(b & 0xf)]);
            } else {
                self.bytes(escape);
            }
        }
        self.bytes(&bytes[plain..]);
        self.byte(b'"');
    }

    /// A quoted string for line formats with no escapes (Pajé): double
    /// quotes become single quotes, control characters spaces, and the
    /// empty string, which pajeng cannot read, `(unnamed)` (room:
    /// [`text_room`]).
    pub(crate) fn quoted_plain(&mut self, s: &str) {
        if s.is_empty() {
            self.bytes(b"\"(unnamed)\"");
            return;
        }
        self.byte(b'"');
        for &b in s.as_bytes() {
            self.byte(match b {
                b'"' => b'\'',
                0..=0x1f | 0x7f => b' ',
                _ => b,
            });
        }
        self.byte(b'"');
    }
}

/// Whether `bytes` need no JSON escape: no control character, quote or
/// backslash. Eight bytes at a time (names are short and usually plain),
/// the last eight (or four) read as a word overlapping the one before,
/// not byte by byte.
#[inline(always)]
fn json_plain(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // Bytes of `w` below `n` (n <= 0x80) have their high bit set here
    // (a byte of 0x80 or more never does).
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * n as u64) & !w & HIGHS;
    let zero = |w: u64| below(w, 1);
    let plain = |w: u64| below(w, 0x20) | zero(w ^ (ONES * b'"' as u64)) | zero(w ^ (ONES * b'\\' as u64)) == 0;
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as u64;
    match bytes.len() {
        n @ 8.. => (0..n / 8).all(|i| plain(word(8 * i))) && plain(word(n - 8)),
        n @ 4..8 => plain(half(0) | half(n - 4) << 32),
        _ => bytes.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\'),
    }
}

fn hex(nibble: u8) -> u8 {
    b"0123456789abcdef"[nibble as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `write` puts in a sink over a vector.
    fn sunk(write: impl FnOnce(&mut Sink)) -> Vec<u8> {
        let mut out = Vec::new();
        with_sink(&mut out, "test", |mut sink| {
            write(&mut sink);
            sink.finish()
        })
        .unwrap();
        out
    }

    fn written(f: impl FnOnce(&mut Cursor)) -> String {
        String::from_utf8(sunk(|sink| f(&mut sink.record(4 * RECORD_ROOM)))).unwrap()
    }

    #[test]
    fn dates_are_exact_decimals() {
        assert_eq!(written(|c| c.date(12_345, 0, 3)), "12.345");
        assert_eq!(written(|c| c.date(1_000_000_007, 1_000_000_000, 3)), "0.007");
        assert_eq!(written(|c| c.date(5, 10, 3)), "-0.005");
        assert_eq!(written(|c| c.date(3_000_000_001, 0, 9)), "3.000000001");
        assert_eq!(written(|c| c.fixed(u64::MAX, 9)), "18446744073.709551615");
    }

    #[test]
    fn integers_are_written_in_full() {
        // Every length, and both sides of each power of ten.
        let powers = (1..20).map(|n| 10u64.pow(n)).flat_map(|p| [p - 1, p, p + 1]);
        for v in [0, 7, 12_345, 1 << 40, u64::MAX].into_iter().chain(powers) {
            assert_eq!(written(|c| c.uint(v)), v.to_string());
        }
        for v in [i64::MIN, -1, 0, 42, i64::MAX] {
            assert_eq!(written(|c| c.int(v)), v.to_string());
        }
    }

    #[test]
    fn lane_divisions_give_every_digit() {
        // Every value of four digits in both halves, and each digit place.
        let expect = |v: u64| {
            let text = format!("{v:08}");
            u64::from_le_bytes(text.as_bytes().try_into().unwrap()) - ASCII_ZEROS
        };
        for v in (0..10_000).chain((0..10_000).map(|v| v * 10_000)).chain((0..8).map(|p| 7 * 10u64.pow(p))) {
            assert_eq!(digit_values(v), expect(v), "{v}");
        }
        assert_eq!(digit_values(99_999_999), expect(99_999_999));
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(written(|c| c.json_str("a\"b\\c\nd\u{1}é")), "\"a\\\"b\\\\c\\nd\\u0001é\"");
        assert_eq!(written(|c| c.quoted_plain("say \"hi\"\n")), "\"say 'hi' \"");
        assert_eq!(written(|c| c.quoted_plain("")), "\"(unnamed)\"");
    }

    #[test]
    fn a_record_longer_than_the_buffer_grows_it() {
        let long = "\u{1}".repeat(CHUNK);
        let out = sunk(|sink| {
            sink.record(text_room(&long)).json_str(&long);
            sink.bytes(b"!");
        });
        assert_eq!(out.len(), 6 * CHUNK + 3);
    }

    /// An output that checks what a direct writer needs of the sink.
    struct Blocks {
        writes: Vec<(bool, usize)>,
        bytes: Vec<u8>,
    }

    impl Write for Blocks {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.writes.push(((b.as_ptr() as usize) % ALIGN == 0, b.len()));
            self.bytes.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_output_gets_aligned_whole_blocks_until_the_last_write() {
        let mut out = Blocks { writes: Vec::new(), bytes: Vec::new() };
        // Some 3 chunks of numbers of 8 to 11 digits and a comma.
        let (expected, _) = numbers_behind(&mut out, 10_000_000, (3 * CHUNK / 9) as u64).unwrap();
        let (last, whole) = out.writes.split_last().unwrap();
        assert!(whole.len() >= 2, "{} writes", out.writes.len());
        assert!(whole.iter().all(|&(aligned, len)| aligned && len % ALIGN == 0), "{whole:?}");
        assert!(last.0, "the last write starts the buffer");
        assert!(out.bytes == expected);
    }

    /// Writes `count` numbers from `first` on through a sink; the bytes
    /// expected and the bytes the sink says it wrote.
    fn numbers_behind(out: &mut (dyn Write + Send), first: u64, count: u64) -> Result<(Vec<u8>, u64)> {
        with_sink(out, "test", |mut sink| {
            let mut expected = Vec::new();
            for i in 0..count {
                sink.record(RECORD_ROOM).uint(first + i * 7919);
                sink.bytes(b",");
                expected.extend_from_slice(format!("{},", first + i * 7919).as_bytes());
                sink.maybe_flush()?;
            }
            Ok((expected, sink.finish()?))
        })
    }

    #[test]
    fn a_writer_thread_writes_the_same_bytes() {
        let mut out = Vec::new();
        let (expected, written) = numbers_behind(&mut out, 0, 2_000_000).unwrap();
        assert!(out.len() > 2 * CHUNK, "several buffers were handed over");
        assert!(out == expected);
        assert_eq!(written, out.len() as u64);
    }

    /// Takes nothing: a full disk.
    struct Full;

    impl Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_output_is_an_error_naming_it() {
        for count in [10, 2_000_000] {
            match numbers_behind(&mut Full, 0, count) {
                Err(AnalysisError::Io { path, source }) => {
                    assert_eq!(path, std::path::Path::new("test"));
                    assert_eq!(source.kind(), std::io::ErrorKind::StorageFull, "{count} numbers");
                }
                other => panic!("{count} numbers: expected an I/O error, got {:?}", other.map(|_| ())),
            }
        }
    }

    proptest! {
        #[test]
        fn dates_are_ns_over_1000_exactly(t in any::<u64>(), origin in any::<u64>()) {
            let text = written(|c| c.date(t, origin, 3));
            let (sign, magnitude) = if t >= origin { ("", t - origin) } else { ("-", origin - t) };
            prop_assert_eq!(text, format!("{sign}{}.{:03}", magnitude / 1000, magnitude % 1000));
        }

        #[test]
        fn seconds_and_hundredths_are_exact(v in any::<u64>().prop_map(|v| v >> (v % 64))) {
            let unit = 1_000_000_000;
            prop_assert_eq!(written(|c| c.fixed(v, 9)), format!("{}.{:09}", v / unit, v % unit));
            prop_assert_eq!(written(|c| c.fixed(v, 2)), format!("{}.{:02}", v / 100, v % 100));
        }

        #[test]
        fn numbers_in_the_room_reserved_for_them_read_back(
            vs in proptest::collection::vec(any::<u64>().prop_map(|v| v >> (v % 64)), 1..40),
            negative in any::<i64>(),
        ) {
            // A list the way the exporters write one (members of a
            // communicator): NUMBER_ROOM per number, commas included.
            let out = sunk(|sink| {
                let mut c = sink.record(NUMBER_ROOM * (vs.len() + 1));
                c.int(negative);
                for v in &vs {
                    c.byte(b',');
                    c.uint(*v);
                }
            });
            let expected: Vec<String> = std::iter::once(negative.to_string()).chain(vs.iter().map(u64::to_string)).collect();
            prop_assert_eq!(String::from_utf8(out).unwrap(), expected.join(","));
        }

        #[test]
        fn the_plain_test_agrees_with_byte_by_byte(s in any::<Vec<u8>>()) {
            let slow = s.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\');
            prop_assert_eq!(json_plain(&s), slow);
        }

        #[test]
        fn json_strings_round_trip(s in any::<String>()) {
            let out = sunk(|sink| sink.record(text_room(&s)).json_str(&s));
            prop_assert_eq!(serde_json::from_slice::<String>(&out).unwrap(), s);
        }
    }
}
