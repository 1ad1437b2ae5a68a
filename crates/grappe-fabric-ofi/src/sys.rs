//! Every call into libfabric, and so all of the crate's `unsafe` code.
//!
//! [`Fabric`] owns one endpoint and the objects it needs (fabric, domain,
//! address vector, completion queue) and every buffer the provider may
//! read or write: a buffer given to [`Fabric::post_recv`] or
//! [`Fabric::post_send`] is kept in the posted table until its completion
//! hands it back, so no buffer is freed while the provider still owns it.
//! The rest of the crate is safe code over this interface.
//!
//! The objects are opened with `FI_THREAD_DOMAIN`: the caller serialises
//! every call (the endpoint keeps its `Fabric` behind a mutex).

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::os::fd::RawFd;
use std::ptr;

#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    unsafe_op_in_unsafe_fn,
    missing_docs,
    clippy::all
)]
mod bindings {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}

use bindings as fi;

/// The API version asked of `fi_getinfo`: 1.17, Debian 12's.
const API_VERSION: u32 = (1 << 16) | 17;

/// `FI_ADDR_UNSPEC`, a macro bindgen does not evaluate.
pub(crate) const ADDR_ANY: u64 = u64::MAX;

/// Completions read per `fi_cq_read`.
const BATCH: usize = 32;

/// Bytes of an endpoint name asked for first; `fi_getname` says if it
/// needs more.
const NAME_BYTES: usize = 256;

/// What the application asks of the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wanted<'a> {
    /// Provider name (`tcp;ofi_rxm`...), or libfabric's choice (which
    /// `FI_PROVIDER` filters).
    pub provider: Option<&'a str>,
    /// Local address to bind to, or the provider's choice.
    pub node: Option<&'a str>,
    /// Ask for tagged messages (`FI_TAGGED`); plain messages otherwise.
    pub tagged: bool,
}

/// A libfabric call that failed: what it was, its (positive) error code
/// and `fi_strerror`'s text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallFailed {
    pub op: &'static str,
    pub code: i32,
    pub text: String,
}

/// Why an operation completed in error: the code (`err` of the CQ's
/// error entry) and the provider's explanation (`fi_cq_strerror`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpFailed {
    pub code: i32,
    pub text: String,
}

impl OpFailed {
    /// The operation was cancelled ([`Fabric::cancel`]).
    pub fn is_cancelled(&self) -> bool {
        self.code == fi::FI_ECANCELED as i32
    }
}

/// Which way a buffer went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    Send,
    Recv,
}

/// A completed operation, its buffer handed back.
#[derive(Debug)]
pub(crate) struct Done {
    /// The token given when it was posted.
    pub token: u64,
    pub dir: Dir,
    pub buf: Box<[u8]>,
    /// Bytes received (for a receive).
    pub len: usize,
    pub failure: Option<OpFailed>,
}

/// A post the provider could not take now (its queue is full,
/// `-FI_EAGAIN`): the buffer comes back, to post again after progress.
#[derive(Debug)]
pub(crate) enum Post {
    Taken,
    Busy(Box<[u8]>),
}

#[derive(Debug)]
struct Posted {
    buf: Box<[u8]>,
    token: u64,
    dir: Dir,
}

/// One endpoint and the libfabric objects it needs (see the module's
/// documentation).
#[derive(Debug)]
pub(crate) struct Fabric {
    info: *mut fi::fi_info,
    fabric: *mut fi::fid_fabric,
    domain: *mut fi::fid_domain,
    cq: *mut fi::fid_cq,
    av: *mut fi::fid_av,
    ep: *mut fi::fid_ep,
    provider: String,
    tagged: bool,
    /// None if the provider's completion queue has no descriptor.
    wait_fd: Option<RawFd>,
    /// Bytes of this endpoint's own name, which the provider's addresses have.
    name_len: usize,
    /// Buffers the provider owns; slot `i` is context `i + 1`.
    posted: Vec<Option<Posted>>,
    free: Vec<usize>,
}

// SAFETY: the raw pointers are libfabric objects opened with
// FI_THREAD_DOMAIN, which allows any thread to use them as long as calls
// are serialised; `Fabric` takes `&mut self` for every call, and the crate
// keeps it behind a mutex, so one thread at a time calls. The posted
// buffers are plain heap memory.
unsafe impl Send for Fabric {}

impl Fabric {
    /// Opens an endpoint as `wanted` asks: the first of `fi_getinfo`'s
    /// answers for a reliable-datagram endpoint.
    pub fn open(wanted: Wanted<'_>) -> Result<Fabric, CallFailed> {
        let info = get_info(wanted)?;
        let mut opened = Fabric {
            info,
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            cq: ptr::null_mut(),
            av: ptr::null_mut(),
            ep: ptr::null_mut(),
            // SAFETY: `info` is fi_getinfo's first answer, non-null, whose
            // fabric_attr and prov_name the provider fills (NUL-terminated).
            provider: unsafe { text((*(*info).fabric_attr).prov_name) },
            tagged: wanted.tagged,
            wait_fd: None,
            name_len: usize::MAX,
            posted: Vec::new(),
            free: Vec::new(),
        };
        // On an error `opened` is dropped, which closes what was opened.
        opened.open_objects()?;
        opened.name_len = opened.name()?.len();
        Ok(opened)
    }

    fn open_objects(&mut self) -> Result<(), CallFailed> {
        // SAFETY: each call gets the objects opened by the ones before it
        // (non-null, or the call before failed and we returned), `info` as
        // fi_getinfo made it, attribute structures that live through the
        // call, and out-pointers to fields of `self`, which Drop closes.
        unsafe {
            check("fi_fabric", fi::fi_fabric((*self.info).fabric_attr, &mut self.fabric, ptr::null_mut()))?;
            check("fi_domain", fi::fi_domain(self.fabric, self.info, &mut self.domain, ptr::null_mut()))?;
            let mut cq_attr =
                fi::fi_cq_attr { format: fi::FI_CQ_FORMAT_TAGGED, wait_obj: fi::FI_WAIT_FD, ..Default::default() };
            check("fi_cq_open", fi::fi_cq_open(self.domain, &mut cq_attr, &mut self.cq, ptr::null_mut()))?;
            let mut av_attr = fi::fi_av_attr { type_: fi::FI_AV_UNSPEC, ..Default::default() };
            check("fi_av_open", fi::fi_av_open(self.domain, &mut av_attr, &mut self.av, ptr::null_mut()))?;
            check("fi_endpoint", fi::fi_endpoint(self.domain, self.info, &mut self.ep, ptr::null_mut()))?;
            check("fi_ep_bind (address vector)", fi::fi_ep_bind(self.ep, &mut (*self.av).fid, 0))?;
            let both = u64::from(fi::FI_TRANSMIT | fi::FI_RECV);
            check("fi_ep_bind (completion queue)", fi::fi_ep_bind(self.ep, &mut (*self.cq).fid, both))?;
            check("fi_enable", fi::fi_enable(self.ep))?;
            let mut fd: c_int = -1;
            let arg = (&mut fd as *mut c_int).cast::<c_void>();
            // A provider whose queue has no wait object (udp;ofi_rxd in 1.17
            // takes FI_WAIT_FD and then answers ENOSYS) is polled instead.
            match fi::fi_control(&mut (*self.cq).fid, fi::FI_GETWAIT as c_int, arg) {
                code if code == -(fi::FI_ENOSYS as c_int) => self.wait_fd = None,
                code => {
                    check("fi_control (FI_GETWAIT)", code)?;
                    self.wait_fd = Some(fd);
                }
            }
        }
        Ok(())
    }

    /// The provider's name (`tcp;ofi_rxm`...).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// True if messages are tagged.
    pub fn tagged(&self) -> bool {
        self.tagged
    }

    /// The endpoint's address, as peers give it to [`Fabric::insert`].
    pub fn name(&self) -> Result<Vec<u8>, CallFailed> {
        let mut name = vec![0u8; NAME_BYTES];
        loop {
            let mut len = name.len();
            // SAFETY: `ep` is open; the provider writes at most `len` bytes
            // into `name`, and sets `len` to the size it needs.
            let code = unsafe { fi::fi_getname(&mut (*self.ep).fid, name.as_mut_ptr().cast(), &mut len) };
            if code == -(fi::FI_ETOOSMALL as i32) && len > name.len() {
                name.resize(len, 0);
                continue;
            }
            check("fi_getname", code)?;
            name.truncate(len);
            return Ok(name);
        }
    }

    /// Inserts a peer's address in the address vector; its handle.
    pub fn insert(&mut self, name: &[u8]) -> Result<u64, CallFailed> {
        self.check_name(name)?;
        let mut addr: fi::fi_addr_t = ADDR_ANY;
        // FI_SYNC_ERR: the provider says why an address was not inserted
        // in an array of one error code per address.
        let mut error: c_int = 0;
        let errors = (&mut error as *mut c_int).cast::<c_void>();
        // SAFETY: `av` is open; the provider reads one address from `name`
        // (as many bytes as its address format has, which check_name saw
        // `name` hold), writes one handle to `addr` and one code to `error`.
        let inserted =
            unsafe { fi::fi_av_insert(self.av, name.as_ptr().cast(), 1, &mut addr, fi::FI_SYNC_ERR, errors) };
        match inserted {
            1 => Ok(addr),
            code if code < 0 => Err(failed("fi_av_insert", code as isize)),
            _ if error != 0 => Err(failed("fi_av_insert", error.unsigned_abs() as isize)),
            _ => Err(CallFailed { op: "fi_av_insert", code: 0, text: "the address was not inserted".into() }),
        }
    }

    /// An address as text (`fi_av_straddr`), for messages.
    pub fn address_text(&self, name: &[u8]) -> String {
        let hex = || name.iter().map(|byte| format!("{byte:02x}")).collect();
        if self.check_name(name).is_err() {
            return hex();
        }
        let mut buf = [0 as c_char; 128];
        let mut len = buf.len();
        // SAFETY: `av` is open; the provider reads the address from `name`
        // (long enough: check_name) and writes at most `len` bytes of text, NUL-terminated, to `buf`.
        let text = unsafe { fi::fi_av_straddr(self.av, name.as_ptr().cast(), buf.as_mut_ptr(), &mut len) };
        if text.is_null() {
            return hex();
        }
        // SAFETY: `buf` holds a NUL-terminated string (truncated to fit).
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
    }

    /// Refuses a name shorter than this endpoint's own: the provider reads
    /// an address of its format's size from the bytes it is given.
    fn check_name(&self, name: &[u8]) -> Result<(), CallFailed> {
        let needed = self.name_len;
        match name.len() >= needed && !name.is_empty() {
            true => Ok(()),
            false => Err(CallFailed {
                op: "fi_av_insert",
                code: fi::FI_EINVAL as i32,
                text: format!("an address of {} bytes, where this provider's have {needed}", name.len()),
            }),
        }
    }

    /// Posts `buf` to receive a message from `from` (or [`ADDR_ANY`])
    /// with tag `tag` (ignored unless tagged).
    pub fn post_recv(&mut self, buf: Box<[u8]>, from: u64, tag: u64, token: u64) -> Result<Post, CallFailed> {
        let (slot, context) = self.reserve();
        let (ptr, len) = (buf.as_ptr().cast_mut(), buf.len());
        // SAFETY: `ep` is open; `ptr..ptr+len` is `buf`'s heap memory,
        // which `self.posted` keeps (moving the Box does not move it) until
        // the completion carrying `context` returns it, or Drop closes the
        // endpoint; the context is an integer the provider only hands back
        // (no FI_CONTEXT mode was accepted in get_info).
        let code = unsafe {
            match self.tagged {
                true => fi::fi_trecv(self.ep, ptr.cast(), len, ptr::null_mut(), from, tag, 0, context),
                false => fi::fi_recv(self.ep, ptr.cast(), len, ptr::null_mut(), from, context),
            }
        };
        self.settle_post(slot, code, buf, token, Dir::Recv, "fi_trecv")
    }

    /// Posts the first `len` bytes of `buf` to `to` with tag `tag`
    /// (ignored unless tagged).
    pub fn post_send(&mut self, buf: Box<[u8]>, len: usize, to: u64, tag: u64, token: u64) -> Result<Post, CallFailed> {
        assert!(len <= buf.len(), "sending {len} bytes of a buffer of {}", buf.len());
        let (slot, context) = self.reserve();
        let ptr = buf.as_ptr();
        // SAFETY: as in post_recv; the provider reads `len` bytes of `buf`.
        let code = unsafe {
            match self.tagged {
                true => fi::fi_tsend(self.ep, ptr.cast(), len, ptr::null_mut(), to, tag, context),
                false => fi::fi_send(self.ep, ptr.cast(), len, ptr::null_mut(), to, context),
            }
        };
        self.settle_post(slot, code, buf, token, Dir::Send, "fi_tsend")
    }

    /// Cancels the receives posted with `token`: their completions come
    /// back as cancelled.
    pub fn cancel_recvs(&mut self, token: u64) {
        for slot in 0..self.posted.len() {
            if matches!(&self.posted[slot], Some(p) if p.token == token && p.dir == Dir::Recv) {
                // SAFETY: `ep` is open; the context is one the provider holds.
                // Cancelling what completed meanwhile is refused harmlessly.
                let _ = unsafe { fi::fi_cancel(&mut (*self.ep).fid, context_of(slot)) };
            }
        }
    }

    /// Reads the completion queue (which makes a provider of manual
    /// progress move its data) into `out`, until it is empty.
    pub fn read_completions(&mut self, out: &mut Vec<Done>) -> Result<(), CallFailed> {
        let mut entries = [fi::fi_cq_tagged_entry::default(); BATCH];
        loop {
            // SAFETY: `cq` is open, of format FI_CQ_FORMAT_TAGGED: it writes
            // at most BATCH entries of that layout into `entries`.
            let read = unsafe { fi::fi_cq_read(self.cq, entries.as_mut_ptr().cast(), BATCH) };
            if read == -(fi::FI_EAGAIN as isize) {
                return Ok(());
            }
            if read == -(fi::FI_EAVAIL as isize) {
                out.push(self.read_error()?);
                continue;
            }
            if read < 0 {
                return Err(failed("fi_cq_read", read));
            }
            for entry in &entries[..read as usize] {
                let posted = self.release(entry.op_context);
                out.push(Done { token: posted.token, dir: posted.dir, buf: posted.buf, len: entry.len, failure: None });
            }
        }
    }

    /// True if nothing waits to be read or progressed, so the caller may
    /// sleep on [`Fabric::wait_fd`] (`fi_trywait`).
    pub fn try_wait(&mut self) -> Result<bool, CallFailed> {
        // SAFETY: `fabric` and `cq` are open; the array of one fid lives
        // through the call.
        let code = unsafe {
            let mut fids = [&mut (*self.cq).fid as *mut fi::fid];
            fi::fi_trywait(self.fabric, fids.as_mut_ptr(), 1)
        };
        match code {
            0 => Ok(true),
            code if code == -(fi::FI_EAGAIN as c_int) => Ok(false),
            code => Err(failed("fi_trywait", code as isize)),
        }
    }

    /// The completion queue's wait descriptor: readable when there may be
    /// something to read (check with [`Fabric::try_wait`] first); none if
    /// the provider has none.
    pub fn wait_fd(&self) -> Option<RawFd> {
        self.wait_fd
    }

    fn read_error(&mut self) -> Result<Done, CallFailed> {
        let mut entry = fi::fi_cq_err_entry::default();
        // SAFETY: `cq` is open; it writes one error entry into `entry`,
        // whose err_data (if any) stays valid until the next read.
        let read = unsafe { fi::fi_cq_readerr(self.cq, &mut entry, 0) };
        if read < 0 {
            return Err(failed("fi_cq_readerr", read));
        }
        let mut buf = [0 as c_char; 256];
        // SAFETY: as above; fi_cq_strerror writes at most `buf.len()` bytes,
        // NUL-terminated, and returns `buf` or a static string.
        let text = unsafe {
            let text = fi::fi_cq_strerror(self.cq, entry.prov_errno, entry.err_data, buf.as_mut_ptr(), buf.len());
            match text.is_null() {
                true => strerror(entry.err),
                false => format!("{} ({})", strerror(entry.err), CStr::from_ptr(text).to_string_lossy()),
            }
        };
        let posted = self.release(entry.op_context);
        let failure = Some(OpFailed { code: entry.err, text });
        Ok(Done { token: posted.token, dir: posted.dir, buf: posted.buf, len: entry.len, failure })
    }

    fn reserve(&mut self) -> (usize, *mut c_void) {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.posted.push(None);
            self.posted.len() - 1
        });
        (slot, context_of(slot))
    }

    fn settle_post(
        &mut self,
        slot: usize,
        code: isize,
        buf: Box<[u8]>,
        token: u64,
        dir: Dir,
        op: &'static str,
    ) -> Result<Post, CallFailed> {
        match code {
            0 => {
                self.posted[slot] = Some(Posted { buf, token, dir });
                Ok(Post::Taken)
            }
            code => {
                self.free.push(slot);
                match code == -(fi::FI_EAGAIN as isize) {
                    true => Ok(Post::Busy(buf)),
                    false => Err(failed(op, code)),
                }
            }
        }
    }

    fn release(&mut self, context: *mut c_void) -> Posted {
        let slot = (context as usize).wrapping_sub(1);
        let posted = self.posted.get_mut(slot).and_then(Option::take);
        let posted = posted.unwrap_or_else(|| panic!("completion for context {context:?}, which nothing posted"));
        self.free.push(slot);
        posted
    }
}

impl Drop for Fabric {
    /// Closes the endpoint first (the provider lets go of the posted
    /// buffers), then the objects under it; the buffers are freed after.
    fn drop(&mut self) {
        // SAFETY: each object is closed once, the users of an object before
        // it, and only if it was opened; `info` came from fi_getinfo.
        unsafe {
            for fid in [
                self.ep.cast::<fi::fid>(),
                self.av.cast::<fi::fid>(),
                self.cq.cast::<fi::fid>(),
                self.domain.cast::<fi::fid>(),
                self.fabric.cast::<fi::fid>(),
            ] {
                // Every fid_* structure starts with its `struct fid`.
                if !fid.is_null() {
                    fi::fi_close(fid);
                }
            }
            fi::fi_freeinfo(self.info);
        }
    }
}

/// `fi_getinfo`'s answers for `wanted`, a non-null list.
fn get_infos(wanted: Wanted<'_>) -> Result<*mut fi::fi_info, CallFailed> {
    let provider = wanted.provider.map(c_string).transpose()?;
    let node = wanted.node.map(c_string).transpose()?;
    // SAFETY: fi_allocinfo gives a zeroed fi_info with its attribute
    // structures allocated (or null, checked). The hints borrow
    // `provider` only through fi_getinfo, and the field is reset before
    // fi_freeinfo, which would otherwise free it.
    unsafe {
        let hints = fi::fi_allocinfo();
        if hints.is_null() {
            return Err(CallFailed { op: "fi_allocinfo", code: 12, text: strerror(12) });
        }
        let caps = match wanted.tagged {
            true => fi::FI_TAGGED | fi::FI_SEND | fi::FI_RECV,
            false => fi::FI_MSG | fi::FI_SEND | fi::FI_RECV,
        };
        (*hints).caps = u64::from(caps);
        // No mode bit: the provider may not require FI_CONTEXT (contexts
        // are plain integers) nor a message prefix.
        (*hints).mode = 0;
        (*(*hints).ep_attr).type_ = fi::FI_EP_RDM;
        let domain = (*hints).domain_attr;
        (*domain).threading = fi::FI_THREAD_DOMAIN;
        (*domain).resource_mgmt = fi::FI_RM_ENABLED;
        // No registration of local buffers (FI_MR_LOCAL) is offered.
        (*domain).mr_mode = 0;
        if let Some(name) = &provider {
            (*(*hints).fabric_attr).prov_name = name.as_ptr().cast_mut();
        }
        let node_ptr = node.as_ref().map_or(ptr::null(), |n| n.as_ptr());
        let flags = if node.is_some() { fi::FI_SOURCE } else { 0 };
        let mut info = ptr::null_mut();
        let code = fi::fi_getinfo(API_VERSION, node_ptr, ptr::null(), flags, hints, &mut info);
        (*(*hints).fabric_attr).prov_name = ptr::null_mut();
        fi::fi_freeinfo(hints);
        check("fi_getinfo", code)?;
        if info.is_null() {
            return Err(CallFailed { op: "fi_getinfo", code: fi::FI_ENODATA as i32, text: strerror(61) });
        }
        Ok(info)
    }
}

/// `fi_getinfo`'s first answer for `wanted`.
fn get_info(wanted: Wanted<'_>) -> Result<*mut fi::fi_info, CallFailed> {
    let info = get_infos(wanted)?;
    // SAFETY: `info` is fi_getinfo's non-null list, ours to free: its
    // first entry is kept, the rest freed once.
    unsafe {
        let rest = (*info).next;
        (*info).next = ptr::null_mut();
        if !rest.is_null() {
            fi::fi_freeinfo(rest);
        }
    }
    Ok(info)
}

/// The providers that offer reliable datagram endpoints as
/// [`Fabric::open`] asks for them (tagged or plain messages), each
/// named once, in libfabric's order of preference.
pub fn providers(node: Option<&str>) -> Vec<String> {
    let mut names = Vec::new();
    for tagged in [true, false] {
        let Ok(list) = get_infos(Wanted { provider: None, node, tagged }) else { continue };
        // SAFETY: `list` is fi_getinfo's non-null list, walked through its
        // `next` pointers, read only, then freed once.
        unsafe {
            let mut entry = list;
            while !entry.is_null() {
                let name = text((*(*entry).fabric_attr).prov_name);
                if !names.contains(&name) {
                    names.push(name);
                }
                entry = (*entry).next;
            }
            fi::fi_freeinfo(list);
        }
    }
    names
}

/// libfabric's text for error code `code` (positive).
pub(crate) fn strerror(code: i32) -> String {
    // SAFETY: fi_strerror returns a static NUL-terminated string for any code.
    unsafe { CStr::from_ptr(fi::fi_strerror(code)) }.to_string_lossy().into_owned()
}

fn c_string(text: &str) -> Result<CString, CallFailed> {
    CString::new(text).map_err(|_| CallFailed { op: "fi_getinfo", code: 22, text: format!("{text:?} holds a NUL") })
}

/// A NUL-terminated string from libfabric, or "" for null.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string.
unsafe fn text(ptr: *const c_char) -> String {
    match ptr.is_null() {
        true => String::new(),
        // SAFETY: the caller's contract.
        false => unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned(),
    }
}

fn context_of(slot: usize) -> *mut c_void {
    // An integer the provider hands back, never dereferenced.
    (slot + 1) as *mut c_void
}

fn check(op: &'static str, code: i32) -> Result<(), CallFailed> {
    match code {
        code if code < 0 => Err(failed(op, code as isize)),
        _ => Ok(()),
    }
}

fn failed(op: &'static str, code: isize) -> CallFailed {
    let code = code.unsigned_abs().min(i32::MAX as usize) as i32;
    CallFailed { op, code, text: strerror(code) }
}
