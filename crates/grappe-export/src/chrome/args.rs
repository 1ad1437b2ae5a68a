//! The `args` of a Chrome slice: a call's attributes (see `crate::args`)
//! as one JSON object, what Perfetto shows when the slice is selected.

use crate::args::{Args, Key};
use crate::sink::Cursor;

/// Writes attributes as `,"args":{"comm":..,..}` into a record.
pub(super) struct Json<'c, 's>(pub(super) &'c mut Cursor<'s>);

impl Args for Json<'_, '_> {
    #[inline(always)]
    fn uint(&mut self, key: Key, v: u64) {
        self.0.bytes(key.json);
        self.0.uint(v);
    }

    #[inline(always)]
    fn int(&mut self, key: Key, v: i64) {
        self.0.bytes(key.json);
        self.0.int(v);
    }

    #[inline(always)]
    fn flag(&mut self, key: Key, v: bool) {
        self.0.bytes(key.json);
        if v { self.0.bytes(b"true") } else { self.0.bytes(b"false") }
    }

    #[inline(always)]
    fn word(&mut self, key: Key, v: &'static str) {
        self.0.bytes(key.json);
        self.0.byte(b'"');
        self.0.bytes(v.as_bytes());
        self.0.byte(b'"');
    }

    #[inline(always)]
    fn text(&mut self, key: Key, v: &str) {
        self.0.bytes(key.json);
        self.0.json_str(v);
    }

    fn ranks(&mut self, key: Key, v: &[u32]) {
        self.0.bytes(key.json);
        self.0.byte(b'[');
        for (i, &rank) in v.iter().enumerate() {
            if i > 0 {
                self.0.byte(b',');
            }
            self.0.uint(rank as u64);
        }
        self.0.byte(b']');
    }

    #[inline(always)]
    fn end(&mut self) {
        self.0.byte(b'}');
    }
}
