//! Starting to read a merged trace at a resume point ([`crate::resume`]):
//! the blocks before it are passed without reading their events.

use std::io::{Seek, SeekFrom};

use super::{BlockHead, TraceError, TraceFile};
use crate::format::{BLOCK_HEADER, BlockKind};
use crate::resume::{Resume, ResumeHead, decode_resume_head, resume_settled};

impl TraceFile {
    /// Moves to the last resume point before which every event ended
    /// before `date`, and gives it, its events decoded: the next blocks
    /// read are those after it. On the way, definitions and clock samples
    /// are read, event blocks passed unread (their checksums unchecked).
    /// `Ok(None)`, and the reader where it was, if the file has no such
    /// point (a per-rank file, a merged file written before resume
    /// points, or a date before the first): a block partly read by
    /// [`Self::next_batch_into`] goes on where it stopped. Events read
    /// before a point found are not given again.
    pub fn resume_before(&mut self, date: u64) -> Result<Option<Resume>, TraceError> {
        if self.ending.is_some() {
            return Ok(None);
        }
        let begin = self.offset;
        // The search reads payloads over the events block being decoded:
        // without it put back, a reader that stays would lose the rest of it.
        let (batch, payload) = (self.batch.take(), std::mem::take(&mut self.payload));
        let point = self.last_resume_before(date);
        self.payload = payload;
        self.batch = batch;
        self.ending = None;
        self.seek_to(begin)?;
        let Some(point) = point? else { return Ok(None) };
        while let Some(head) = self.next_head()? {
            if head.start == point {
                return self.take_resume(&head);
            }
            match head.kind {
                BlockKind::Definitions | BlockKind::ClockSamples => {
                    let Some((kind, at)) = self.read_payload(&head)? else { break };
                    self.absorb(kind, at)?;
                }
                _ => self.pass_payload(&head)?,
            }
        }
        Err(self.corrupt(point, "the resume point found a moment ago (the file changed?)".to_owned()))
    }

    /// The offset of the last resume block whose settled date is before
    /// `date`, reading only block headers and resume payloads. Leaves the
    /// reader anywhere: the caller goes back.
    fn last_resume_before(&mut self, date: u64) -> Result<Option<u64>, TraceError> {
        let mut found = None;
        while let Some(head) = self.next_head()? {
            match head.kind {
                BlockKind::Resume => {
                    let Some((_, at)) = self.read_payload(&head)? else { break };
                    let settled = resume_settled(&self.payload).map_err(|e| self.corrupt_in(at, e))?;
                    if settled >= date {
                        break; // later points settle later still
                    }
                    found = Some(head.start);
                }
                BlockKind::Footer => break,
                _ => self.pass_payload(&head)?,
            }
        }
        Ok(found)
    }

    /// Reads the resume block whose header was just read.
    fn take_resume(&mut self, head: &BlockHead) -> Result<Option<Resume>, TraceError> {
        let Some((_, at)) = self.read_payload(head)? else {
            return Err(self.corrupt(head.start, "the resume point found a moment ago (the file changed?)".into()));
        };
        let payload = std::mem::take(&mut self.payload);
        let decoded = decode_resume_head(&payload).map_err(|e| self.corrupt_in(at, e)).and_then(|(head, pos)| {
            let mut events = Vec::new();
            self.decode_event_block(&payload[pos..], at + pos as u64, &mut events)?;
            let ResumeHead { settled, next_message, in_flight } = head;
            // What a point carries ended before it: a reader starting there
            // counts on it (none of it may fall in the interval it reads).
            let late = events.iter().map(|e| e.end).chain(in_flight.iter().map(|m| m.end)).find(|&end| end > settled);
            match late {
                Some(end) => Err(self.corrupt(
                    at,
                    format!("a resume point settled by its date {settled}, not one holding a date {end}"),
                )),
                None => Ok(Resume { settled, next_message, in_flight, events }),
            }
        });
        self.payload = payload;
        decoded.map(Some)
    }

    /// Passes the payload of the block whose header was just read.
    fn pass_payload(&mut self, head: &BlockHead) -> Result<(), TraceError> {
        self.input.seek_relative(head.len as i64).map_err(|source| self.io(source))?;
        self.offset = head.start + (BLOCK_HEADER + head.len) as u64;
        Ok(())
    }

    fn seek_to(&mut self, offset: u64) -> Result<(), TraceError> {
        self.input.seek(SeekFrom::Start(offset)).map_err(|source| self.io(source))?;
        self.offset = offset;
        Ok(())
    }
}
