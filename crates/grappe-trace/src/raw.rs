//! The raw record: what the recorder writes on the hot path, and what the
//! file encoding compresses.
//!
//! Every event fits in 56 bytes of fixed slots, so recording one is a few
//! stores into a preallocated buffer. What each slot means depends on the
//! kind; [`slots_of`] is that table, and the file header publishes it (the
//! schema), so readers in other languages can decode a trace without this
//! code. Strings and member lists are not in the record: it holds their
//! ids in the trace's definitions.

use crate::event::{Body, CollectiveKind, Completion, Event, EventKind};
use crate::interned::{Members, Text};
use crate::site::Site;

/// One recorded event in fixed slots.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RawEvent {
    /// Start date, in ticks of the recorder's clock.
    pub start: u64,
    /// End date, in the same ticks.
    pub end: u64,
    /// [`EventKind`] id.
    pub kind: u16,
    /// Small attributes (see [`slots_of`]).
    pub flags: u16,
    /// Slots whose meaning depends on the kind.
    pub a: u32,
    #[allow(missing_docs)]
    pub b: u32,
    #[allow(missing_docs)]
    pub c: u32,
    /// The call site: its string id plus one, 0 for none.
    pub site: u32,
    #[allow(missing_docs)]
    pub d: u64,
    #[allow(missing_docs)]
    pub e: u64,
}

const _: () = assert!(std::mem::size_of::<RawEvent>() == 56);

/// A slot of a raw record. The discriminant orders the slots as the
/// record does (the decoder gathers values in an array by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// `flags` (u16)
    Flags = 0,
    /// `a` (u32)
    A,
    /// `b` (u32; tags are stored as their two's complement)
    B,
    /// `c` (u32)
    C,
    /// `d` (u64)
    D,
    /// `e` (u64)
    E,
    /// `site` (u32: a string id plus one, 0 for none)
    Site,
}

impl Slot {
    /// Name of the slot in the schema.
    pub fn name(self) -> &'static str {
        match self {
            Slot::Flags => "flags",
            Slot::A => "a",
            Slot::B => "b",
            Slot::C => "c",
            Slot::D => "d",
            Slot::E => "e",
            Slot::Site => "site",
        }
    }
}

/// The slots a kind uses, with the attribute each one holds.
pub const fn slots_of(kind: EventKind) -> &'static [(&'static str, Slot)] {
    use Slot::*;
    match kind {
        EventKind::FlushBegin | EventKind::FlushEnd => &[],
        EventKind::Init | EventKind::Finalize => &[("site_def", Site)],
        EventKind::Send => &[("dest", A), ("tag", B), ("comm", C), ("bytes", D), ("seq", E), ("site_def", Site)],
        EventKind::Recv => &[("src", A), ("tag", B), ("comm", C), ("bytes", D), ("arrived", Flags), ("site_def", Site)],
        EventKind::Isend => {
            &[("dest", A), ("tag", B), ("comm", C), ("bytes", D), ("seq_request", E), ("site_def", Site)]
        }
        EventKind::Irecv => &[("src", A), ("tag", B), ("comm", C), ("request", E), ("site_def", Site)],
        EventKind::Wait | EventKind::Test => &[
            ("completion", Flags),
            ("src", A),
            ("tag", B),
            ("comm", C),
            ("bytes", D),
            ("request", E),
            ("site_def", Site),
        ],
        EventKind::Probe | EventKind::Iprobe => &[
            ("found", Flags),
            ("src", A),
            ("tag", B),
            ("comm", C),
            ("bytes", D),
            ("found_src_tag", E),
            ("site_def", Site),
        ],
        EventKind::Collective => &[("op", Flags), ("root", A), ("comm", C), ("bytes", D), ("site_def", Site)],
        EventKind::CommCreate => &[("comm", A), ("parent", C), ("members_def", E), ("site_def", Site)],
        EventKind::RegionEnter | EventKind::Point => &[("name_def", A), ("location_def", B)],
        EventKind::RegionLeave => &[("name_def", A)],
        EventKind::Counter => &[("name_def", A), ("value", E)],
    }
}

// Bits of `flags` for completions (wait, test, probe), and of a receive's
// `arrived` slot (ARRIVED and RECV_OF_SENDRECV); FAILED in both, and in a
// collective's `op` slot.
const DONE: u16 = 1;
const IS_RECV: u16 = 2;
/// Bit of a receive's `arrived` slot: the message had arrived before the
/// receive was posted.
pub const ARRIVED: u16 = 4;

/// Bit of a receive's `arrived` slot: the receive is the second half of a
/// `sendrecv`, whose first half is the send the rank recorded just before
/// it, with the same dates. (Older files never set it: their sendrecvs
/// read as a send and a receive.)
pub const RECV_OF_SENDRECV: u16 = 8;

/// Bit of a receive's `arrived` slot: the receive asked for any source
/// (a wildcard), so the message it got was one of those that could have
/// matched it. (Older files never set it: their wildcard blocking
/// receives read as receives from the source they got.)
pub const ASKED_ANY_SOURCE: u16 = 16;

/// Bit of `flags` of receives, waits, tests, probes and collectives: the
/// call failed because a peer died or the job was stopped (see
/// [`Body`]). Above the low byte, which holds a collective's operation.
/// (Format version 3; version 2 files never set it.)
pub const FAILED: u16 = 0x100;

/// Bit of a send's `seq` slot, which has no flags: the send failed (see
/// [`Body`]), and has no sequence number. Sequence numbers count one
/// rank's sends to one peer: they never reach it. Successful sends pay
/// nothing for it, where a flags slot would cost every send a byte.
pub const SEND_FAILED: u64 = 1 << 63;

/// Bit of a send's `seq` slot: the send was synchronous (`ssend`, MPI's
/// `MPI_Ssend`): it ended once its receive had matched it. (Older files
/// never set it: their synchronous sends read as standard ones.)
pub const SEND_SYNC: u64 = 1 << 62;

/// `FAILED` if `failed`.
#[inline(always)]
fn failed_flag(failed: bool) -> u16 {
    if failed { FAILED } else { 0 }
}

/// Packs a completion into (flags, a, b, d).
pub fn pack_completion(c: Option<Completion>) -> (u16, u32, u32, u64) {
    match c {
        None => (0, 0, 0, 0),
        Some(c) => {
            let flags = DONE | if c.is_recv { IS_RECV } else { 0 } | if c.arrived { ARRIVED } else { 0 };
            (flags, c.src, c.tag as u32, c.bytes)
        }
    }
}

fn unpack_completion(flags: u16, src: u32, tag: u32, bytes: u64) -> Option<Completion> {
    (flags & DONE != 0).then_some(Completion {
        is_recv: flags & IS_RECV != 0,
        src,
        tag: tag as i32,
        bytes,
        arrived: flags & ARRIVED != 0,
    })
}

/// Strings and member lists referenced by raw records.
pub trait Definitions {
    /// The string with definition id `id`, if it is defined and was kept
    /// (see [`Definitions::defined`]).
    fn string(&self, id: u32) -> Option<Text>;
    /// Whether string `id` was defined, kept or not: a string is not kept
    /// past the process's bound on text ([`crate::interned::MAX_TEXT_BYTES`]).
    fn defined(&self, id: u32) -> bool;
    /// The member list with definition id `id`: a missing definition, or
    /// one past the process's bound ([`crate::interned::MAX_MEMBER_BYTES`]),
    /// is an error.
    fn members(&self, id: u64) -> Result<Members, DecodeError>;
}

/// Why a raw record could not become an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The kind id is not in the catalogue.
    UnknownKind(u16),
    /// A collective op id is not in the catalogue.
    UnknownCollective(u16),
    /// A definition id refers to nothing defined before it.
    MissingDefinition(&'static str, u64),
    /// A string (of the slot named) defined past the process's bound on
    /// text ([`crate::interned::MAX_TEXT_BYTES`]).
    PastTextBound(&'static str, u32),
    /// A member list defined past the process's bound on them
    /// ([`crate::interned::MAX_MEMBER_BYTES`]).
    PastMemberBound(u64),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::UnknownKind(id) => write!(f, "unknown event kind {id}"),
            DecodeError::UnknownCollective(id) => write!(f, "unknown collective operation {id}"),
            DecodeError::MissingDefinition(what, id) => {
                write!(f, "{what} definition {id} is used before it is defined")
            }
            DecodeError::PastTextBound(what, id) => write!(
                f,
                "{what} definition {id} is past the {} MiB of distinct texts a process reads",
                crate::interned::MAX_TEXT_BYTES >> 20
            ),
            DecodeError::PastMemberBound(id) => write!(
                f,
                "members definition {id} is past the {} MiB of distinct member lists a process reads",
                crate::interned::MAX_MEMBER_BYTES >> 20
            ),
        }
    }
}

impl RawEvent {
    /// The call site this record names, if any.
    #[inline(always)]
    pub fn site_of<D: Definitions + ?Sized>(&self, defs: &D) -> Result<Option<Site>, DecodeError> {
        let Some(id) = self.site.checked_sub(1) else { return Ok(None) };
        match defs.string(id) {
            Some(text) => Ok(Some(Site::from_text(text))),
            None => Err(string_error(defs, id, "site")),
        }
    }

    /// The event body this record encodes.
    #[inline(always)]
    pub fn body<D: Definitions + ?Sized>(&self, defs: &D) -> Result<Body, DecodeError> {
        let kind = EventKind::from_id(self.kind).ok_or(DecodeError::UnknownKind(self.kind))?;
        let string = |id: u32, what| defs.string(id).ok_or_else(|| string_error(defs, id, what));
        let tag = self.b as i32;
        let failed = self.flags & FAILED != 0;
        Ok(match kind {
            EventKind::Init => Body::Init,
            EventKind::Finalize => Body::Finalize,
            EventKind::FlushBegin => Body::FlushBegin,
            EventKind::FlushEnd => Body::FlushEnd,
            EventKind::Send => {
                let (seq, failed) = (self.e & !(SEND_FAILED | SEND_SYNC), self.e & SEND_FAILED != 0);
                let sync = self.e & SEND_SYNC != 0;
                Body::Send { dest: self.a, tag, comm: self.c, bytes: self.d, seq, failed, sync }
            }
            EventKind::Recv => {
                let (arrived, sendrecv) = (self.flags & ARRIVED != 0, self.flags & RECV_OF_SENDRECV != 0);
                let any_source = self.flags & ASKED_ANY_SOURCE != 0;
                Body::Recv { src: self.a, tag, comm: self.c, bytes: self.d, arrived, sendrecv, failed, any_source }
            }
            EventKind::Isend => Body::Isend {
                dest: self.a,
                tag,
                comm: self.c,
                bytes: self.d,
                seq: self.e >> 32,
                request: self.e & 0xffff_ffff,
            },
            EventKind::Irecv => Body::Irecv { src: self.a, tag: self.b, comm: self.c, request: self.e },
            EventKind::Wait => Body::Wait {
                request: self.e,
                comm: self.c,
                completion: unpack_completion(self.flags | DONE, self.a, self.b, self.d).expect("done"),
                failed,
            },
            EventKind::Test => {
                let completion = unpack_completion(self.flags, self.a, self.b, self.d);
                Body::Test { request: self.e, comm: self.c, completion, failed }
            }
            EventKind::Probe | EventKind::Iprobe => {
                let found = unpack_completion(self.flags, (self.e >> 32) as u32, self.e as u32, self.d);
                let (src, tag, comm) = (self.a, self.b, self.c);
                if kind == EventKind::Probe {
                    Body::Probe { src, tag, comm, found, failed }
                } else {
                    Body::Iprobe { src, tag, comm, found, failed }
                }
            }
            EventKind::Collective => Body::Collective {
                op: CollectiveKind::from_id(self.flags as u8).ok_or(DecodeError::UnknownCollective(self.flags))?,
                comm: self.c,
                root: self.a,
                bytes: self.d,
                failed,
            },
            EventKind::CommCreate => Body::CommCreate { comm: self.a, parent: self.c, members: defs.members(self.e)? },
            EventKind::RegionEnter => {
                Body::RegionEnter { name: string(self.a, "name")?, location: string(self.b, "location")? }
            }
            EventKind::RegionLeave => Body::RegionLeave { name: string(self.a, "name")? },
            EventKind::Point => Body::Point { name: string(self.a, "name")?, location: string(self.b, "location")? },
            EventKind::Counter => Body::Counter { name: string(self.a, "name")?, value: self.e as i64 },
        })
    }
}

#[cold]
fn string_error<D: Definitions + ?Sized>(defs: &D, id: u32, what: &'static str) -> DecodeError {
    if defs.defined(id) {
        DecodeError::PastTextBound(what, id)
    } else {
        DecodeError::MissingDefinition(what, id as u64)
    }
}

/// Where the ids of strings and member lists come from when encoding.
pub trait Interner {
    /// Id of a string, defining it if new.
    fn intern(&mut self, s: &str) -> u32;
    /// Id of an event's text (a name, a location), defining it if new.
    fn text(&mut self, text: Text) -> u32 {
        self.intern(text.as_str())
    }
    /// Id of a call site's text, defining it if new.
    fn site(&mut self, site: Site) -> u32 {
        self.text(site.as_text())
    }
    /// Id of a member list, defining it.
    fn members(&mut self, members: &[u32]) -> u64;
}

/// The raw record of an event, call site included (start and end are set
/// by the caller). Inlined: `merge` calls it for every event, and LLVM
/// stops inlining it on its own once it has a second caller (25
/// instructions an event).
#[inline(always)]
pub fn raw_of_event(event: &Event, interner: &mut dyn Interner) -> RawEvent {
    let mut raw = raw_of(&event.body, interner);
    raw.site = event.site.map_or(0, |site| interner.site(site) + 1);
    raw
}

/// The raw record of an event body, without a call site (start and end
/// are set by the caller).
pub fn raw_of(body: &Body, interner: &mut dyn Interner) -> RawEvent {
    let mut r = RawEvent { kind: body.kind().id(), ..RawEvent::default() };
    match body {
        Body::Init | Body::Finalize | Body::FlushBegin | Body::FlushEnd => {}
        Body::Send { dest, tag, comm, bytes, seq, failed, sync } => {
            (r.a, r.b, r.c, r.d) = (*dest, *tag as u32, *comm, *bytes);
            r.e = seq | if *failed { SEND_FAILED } else { 0 } | if *sync { SEND_SYNC } else { 0 };
        }
        Body::Recv { src, tag, comm, bytes, arrived, sendrecv, failed, any_source } => {
            (r.a, r.b, r.c, r.d) = (*src, *tag as u32, *comm, *bytes);
            r.flags = if *arrived { ARRIVED } else { 0 } | if *sendrecv { RECV_OF_SENDRECV } else { 0 };
            r.flags |= failed_flag(*failed) | if *any_source { ASKED_ANY_SOURCE } else { 0 };
        }
        Body::Isend { dest, tag, comm, bytes, seq, request } => {
            (r.a, r.b, r.c, r.d) = (*dest, *tag as u32, *comm, *bytes);
            r.e = seq << 32 | (request & 0xffff_ffff);
        }
        Body::Irecv { src, tag, comm, request } => (r.a, r.b, r.c, r.e) = (*src, *tag, *comm, *request),
        Body::Wait { request, comm, completion, failed } => {
            (r.flags, r.a, r.b, r.d) = pack_completion(Some(*completion));
            (r.c, r.e) = (*comm, *request);
            r.flags |= failed_flag(*failed);
        }
        Body::Test { request, comm, completion, failed } => {
            (r.flags, r.a, r.b, r.d) = pack_completion(*completion);
            (r.c, r.e) = (*comm, *request);
            r.flags |= failed_flag(*failed);
        }
        Body::Probe { src, tag, comm, found, failed } | Body::Iprobe { src, tag, comm, found, failed } => {
            let (flags, fsrc, ftag, bytes) = pack_completion(*found);
            (r.flags, r.a, r.b, r.c, r.d) = (flags | failed_flag(*failed), *src, *tag, *comm, bytes);
            r.e = (fsrc as u64) << 32 | ftag as u64;
        }
        Body::Collective { op, comm, root, bytes, failed } => {
            (r.flags, r.a, r.c, r.d) = (*op as u16 | failed_flag(*failed), *root, *comm, *bytes);
        }
        Body::CommCreate { comm, parent, members } => (r.a, r.c, r.e) = (*comm, *parent, interner.members(members)),
        Body::RegionEnter { name, location } | Body::Point { name, location } => {
            (r.a, r.b) = (interner.text(*name), interner.text(*location));
        }
        Body::RegionLeave { name } => r.a = interner.text(*name),
        Body::Counter { name, value } => (r.a, r.e) = (interner.text(*name), *value as u64),
    }
    r
}
