//! A call's attributes (see `crate::args`) as Perfetto debug annotations,
//! their names and string values numbered on the sequence.

use super::proto::DebugAnnotation;
use super::sequence::Sequence;
use crate::args::{Args, Key};

/// Appends annotations to an event's.
pub(super) struct Annotations<'a> {
    pub(super) sequence: &'a mut Sequence,
    pub(super) out: &'a mut Vec<DebugAnnotation>,
}

impl Annotations<'_> {
    #[inline(always)]
    fn push(&mut self, key: Key, value: DebugAnnotation) {
        let name_iid = Some(self.sequence.annotation_name(key.name));
        self.out.push(DebugAnnotation { name_iid, ..value });
    }
}

impl Args for Annotations<'_> {
    #[inline(always)]
    fn uint(&mut self, key: Key, v: u64) {
        self.push(key, DebugAnnotation { uint_value: Some(v), ..DebugAnnotation::default() });
    }

    #[inline(always)]
    fn int(&mut self, key: Key, v: i64) {
        self.push(key, DebugAnnotation { int_value: Some(v), ..DebugAnnotation::default() });
    }

    #[inline(always)]
    fn flag(&mut self, key: Key, v: bool) {
        self.push(key, DebugAnnotation { bool_value: Some(v), ..DebugAnnotation::default() });
    }

    #[inline(always)]
    fn word(&mut self, key: Key, v: &'static str) {
        self.text(key, v);
    }

    #[inline(always)]
    fn text(&mut self, key: Key, v: &str) {
        let string_value_iid = Some(self.sequence.string(v));
        self.push(key, DebugAnnotation { string_value_iid, ..DebugAnnotation::default() });
    }

    fn ranks(&mut self, key: Key, v: &[u32]) {
        let ranks =
            v.iter().map(|&rank| DebugAnnotation { uint_value: Some(rank as u64), ..DebugAnnotation::default() });
        self.push(key, DebugAnnotation { array_values: ranks.collect(), ..DebugAnnotation::default() });
    }

    fn end(&mut self) {}
}
