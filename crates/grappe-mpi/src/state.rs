//! The library's state in a process: the runtime and its one rank, and
//! the tables that map C handles to the rank's communicators and requests.
//!
//! C programs call MPI from any thread the thread level allows, while a
//! rank's objects (`Communicator`, requests) are single-threaded (`Rc`):
//! every call takes the state's lock for its whole duration, so that the
//! rank's objects are only ever touched by one thread at a time. Under
//! `MPI_THREAD_MULTIPLE`, blocking calls let go of the lock while they
//! wait (see [`waiting`](crate::waiting)).

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::thread::ThreadId;

use grappe_comm::{Communicator, Request, Scope};
use grappe_runtime::{Rank, Runtime};
use parking_lot::RawMutex;
use parking_lot::lock_api::RawMutex as _;

use crate::abi::{self, class, kind};
use crate::errors::{MpiError, Result};
use crate::waiting;

/// Where the library is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    Before = 0,
    Running = 1,
    Finalized = 2,
}

static PHASE: AtomicU8 = AtomicU8::new(Phase::Before as u8);

pub fn phase() -> Phase {
    match PHASE.load(Ordering::Acquire) {
        0 => Phase::Before,
        1 => Phase::Running,
        _ => Phase::Finalized,
    }
}

pub fn set_phase(phase: Phase) {
    PHASE.store(phase as u8, Ordering::Release);
}

/// A communicator known to C, with what MPI attaches to it.
pub struct CommEntry {
    pub comm: Communicator,
    /// `MPI_ERRORS_ARE_FATAL`, `MPI_ERRORS_RETURN` or `MPI_ERRORS_ABORT`.
    pub errhandler: c_int,
    pub name: String,
    /// Attributes: keyval and value, in the order set.
    pub attrs: Vec<(c_int, AttrValue)>,
    /// The virtual topology, if the communicator has one.
    pub topology: Option<crate::api::Topology>,
    /// A private duplicate for neighbourhood collectives, made at the first.
    pub neighbours: Option<Communicator>,
    /// The library's communicators beside an intercommunicator.
    pub inter: Option<crate::api::Inter>,
    /// The handle of an `MPI_Comm_idup` not complete yet: no call may use
    /// it (`comm` is the communicator duplicated, a placeholder).
    pub pending: bool,
}

impl CommEntry {
    pub fn new(comm: Communicator, errhandler: c_int, name: &str) -> CommEntry {
        CommEntry {
            comm,
            errhandler,
            name: name.to_owned(),
            attrs: Vec::new(),
            topology: None,
            neighbours: None,
            inter: None,
            pending: false,
        }
    }
}

/// An attribute's value as it was set. C sets a pointer; Fortran sets an
/// integer, which MPI's rules for attributes across languages have C see
/// through its address (C gets a pointer to the integer), so it lives in a
/// cell of its own whose address stays valid while the attribute does.
#[derive(Debug)]
pub enum AttrValue {
    Pointer(usize),
    Integer(Box<isize>),
}

impl AttrValue {
    /// What C gets: the pointer, or the address of the integer.
    pub fn for_c(&self) -> usize {
        match self {
            AttrValue::Pointer(value) => *value,
            AttrValue::Integer(cell) => &**cell as *const isize as usize,
        }
    }

    /// What Fortran gets: the pointer as an integer, or the integer.
    pub fn for_fortran(&self) -> isize {
        match self {
            AttrValue::Pointer(value) => *value as isize,
            AttrValue::Integer(cell) => **cell,
        }
    }

    /// Whether Fortran set it.
    pub fn is_integer(&self) -> bool {
        matches!(self, AttrValue::Integer(_))
    }

    /// A Fortran integer if `integer`, else a C pointer.
    pub fn new(integer: bool, value: usize) -> AttrValue {
        match integer {
            true => AttrValue::Integer(Box::new(value as isize)),
            false => AttrValue::Pointer(value),
        }
    }
}

/// An attribute key (`MPI_Comm_create_keyval`): its callbacks and their extra state.
#[derive(Debug, Clone, Copy)]
pub struct Keyval {
    pub copy: Option<crate::api::CopyFunction>,
    pub delete: Option<crate::api::DeleteFunction>,
    pub extra_state: usize,
    /// The binding library's proxies through which the callbacks are
    /// called (Fortran keys, see `api::fortran_binding`).
    pub proxies: (Option<crate::api::CopyProxy>, Option<crate::api::DeleteProxy>),
    /// How many attributes set with this key exist now: a freed key lives
    /// on until the last of them is deleted (MPI_Comm_free_keyval), so that
    /// their copy and delete callbacks still run.
    pub attached: usize,
    /// Whether the program freed the key (it can no longer name it).
    pub freed: bool,
}

/// A request known to C: what is under way now (`None`: an inactive
/// persistent request), and, for a persistent request, what each
/// `MPI_Start` starts again.
pub struct RequestSlot {
    pub now: Option<RequestEntry>,
    pub persistent: Option<Persistent>,
}

/// What a persistent request starts each time.
#[derive(Clone)]
pub enum Persistent {
    /// A send or receive.
    P2p(PersistentP2p),
    /// A collective (MPI 4's `MPI_Bcast_init`...).
    Collective(crate::api::Starter),
    /// A partitioned send or receive (MPI 4's `MPI_Psend_init`...).
    Partitioned(crate::api::PartitionedShared),
}

/// The arguments of `MPI_Send_init` or `MPI_Recv_init`.
#[derive(Debug, Clone, Copy)]
pub struct PersistentP2p {
    pub send: bool,
    /// A synchronous send (`MPI_Ssend_init`).
    pub sync: bool,
    /// A buffered send (`MPI_Bsend_init`).
    pub buffered: bool,
    /// The buffer, which MPI says stays valid until the request is freed.
    pub buf: *mut std::ffi::c_void,
    pub count: i64,
    pub datatype: c_int,
    /// Destination or source.
    pub peer: c_int,
    pub tag: c_int,
    pub comm: c_int,
}

/// An operation under way.
// Nearly every entry is `Active`: boxing its request would cost an
// allocation per MPI_Isend/MPI_Irecv for the sake of the rare variants.
#[allow(clippy::large_enum_variant)]
pub enum RequestEntry {
    /// Under way in the engine. The request is dropped before what it
    /// borrows: `keep`, a packed copy of a send's elements, and
    /// `incoming`, where a receive's packed bytes land before they are
    /// unpacked into the program's elements at completion.
    Active {
        request: Request<'static>,
        comm: c_int,
        keep: Option<Box<[u8]>>,
        incoming: Option<crate::api::Incoming<'static>>,
    },
    /// Completed when it started (to or from `MPI_PROC_NULL`).
    Done { status: abi::Status },
    /// The program's own operation (`MPI_Grequest_start`).
    Generalized(Box<Generalized>),
    /// `MPI_Comm_idup`, whose communicator is made when it completes.
    Dup(Box<crate::api::DupUnderWay>),
    /// A round of a partitioned send whose partitions are not all marked
    /// ready yet (`MPI_Pready`): its data is not sent yet.
    Unready,
}

/// A generalized request: the program's callbacks and whether it called
/// `MPI_Grequest_complete`.
#[derive(Clone, Copy)]
pub struct Generalized {
    pub query: Option<GrequestQuery>,
    pub free: Option<GrequestFree>,
    pub cancel: Option<GrequestCancel>,
    pub extra_state: usize,
    /// `MPI_Grequest_complete` was called.
    pub complete: bool,
    /// `MPI_Request_free` was called before it completed: the request
    /// goes when it does.
    pub freed: bool,
    /// The callbacks are Fortran subroutines (started through MPICH's
    /// Fortran library, `MPII_Grequest_set_lang_f77`): they take every
    /// argument by reference and give their error code in a last one.
    pub fortran: bool,
}

/// `MPI_Grequest_query_function`.
pub type GrequestQuery = unsafe extern "C" fn(extra_state: *mut std::ffi::c_void, status: *mut abi::Status) -> c_int;
/// `MPI_Grequest_free_function`.
pub type GrequestFree = unsafe extern "C" fn(extra_state: *mut std::ffi::c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
pub type GrequestCancel = unsafe extern "C" fn(extra_state: *mut std::ffi::c_void, complete: c_int) -> c_int;

/// Slots reached through handles; freed slots are used again.
#[derive(Default)]
pub struct Table<T> {
    slots: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Table<T> {
    pub const fn new() -> Table<T> {
        Table { slots: Vec::new(), free: Vec::new() }
    }

    pub fn insert(&mut self, value: T) -> usize {
        match self.free.pop() {
            Some(index) => {
                self.slots[index] = Some(value);
                index
            }
            None => {
                self.slots.push(Some(value));
                self.slots.len() - 1
            }
        }
    }

    pub fn get(&self, index: usize) -> Option<&T> {
        self.slots.get(index).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.slots.get_mut(index).and_then(Option::as_mut)
    }

    pub fn remove(&mut self, index: usize) -> Option<T> {
        let value = self.slots.get_mut(index)?.take()?;
        self.free.push(index);
        Some(value)
    }
}

/// A request freed while under way, with what it borrows (see [`RequestEntry`]).
pub type Freed = (Request<'static>, Option<Box<[u8]>>, Option<crate::api::Incoming<'static>>);

/// The state of an initialised library.
pub struct State {
    pub runtime: Runtime,
    /// Taken by `MPI_Finalize`.
    pub rank: Option<Rank>,
    /// Slot 0 is `MPI_COMM_WORLD`, slot 1 `MPI_COMM_SELF`; the others are
    /// the direct handles `0x84000000 | slot`.
    pub comms: Table<CommEntry>,
    pub requests: Table<RequestSlot>,
    /// Attribute keys.
    pub keyvals: Table<Keyval>,
    /// Attributes set on datatypes, by datatype handle.
    pub type_attrs: std::collections::HashMap<c_int, Vec<(c_int, AttrValue)>>,
    /// Attributes set on windows, by window handle.
    pub win_attrs: std::collections::HashMap<c_int, Vec<(c_int, AttrValue)>>,
    /// User operations (`MPI_Op_create`): their function and whether it commutes.
    pub ops: Table<(crate::reduce::UserFn, bool)>,
    /// Messages claimed by matched probes, with their communicator.
    pub messages: Table<(grappe_comm::Message, c_int)>,
    /// Groups: the world ranks of their members, in group order.
    pub groups: Table<Vec<usize>>,
    /// Requests freed by `MPI_Request_free` while under way: they complete
    /// on their own, and are dropped once they have.
    pub freed: Vec<Freed>,
    /// Buffered sends under way (`MPI_Bsend`), with their copies.
    pub buffered: Vec<Freed>,
    /// The scope of every request: it lives as long as the process.
    pub scope: &'static Scope<'static, 'static>,
    pub thread_level: c_int,
    pub main_thread: ThreadId,
    /// The rank's doorbell, for threads that wait outside the lock.
    pub bell: grappe_comm::RankBell,
}

/// The state, behind the lock every call takes.
struct Shared(Option<Box<State>>);

/// Where the state lives: reached only by a call that took it (see
/// [`lock`]).
struct Cell(UnsafeCell<Shared>);

// SAFETY: the state holds the rank's single-threaded objects (`Rc`s inside
// communicators, requests and the scope). They are only reached through a
// `Locked`, which a call holds for its whole length and which no
// reference to them outlives; two `Locked` never exist at once, by the
// lock under `MPI_THREAD_MULTIPLE` and by MPI's own rule below it (see
// `lock`): so no two threads ever touch them at once, which is all `Rc`
// and `RefCell` need.
unsafe impl Sync for Cell {}

static STATE: Cell = Cell(UnsafeCell::new(Shared(None)));
/// The lock of `MPI_THREAD_MULTIPLE` (and of init and finalize).
static LOCK: RawMutex = RawMutex::INIT;
/// Whether calls take [`LOCK`]; below `MPI_THREAD_MULTIPLE` they only
/// mark the library [`BUSY`].
static LOCKING: AtomicBool = AtomicBool::new(true);
/// A call is inside the library (below `MPI_THREAD_MULTIPLE`).
static BUSY: AtomicBool = AtomicBool::new(false);

/// The state, for one call.
pub struct Locked {
    /// This call took [`LOCK`] (else it marked [`BUSY`]).
    locked: bool,
    /// Set by a waiter whose last poll moved nothing: its release of the
    /// lock wakes nobody (see [`waiting`](crate::waiting)).
    pub quiet: bool,
    /// Held by the thread that took it.
    _not_send: PhantomData<*const ()>,
}

impl Locked {
    /// Runs `f`, one of the program's callbacks, with the state let go
    /// (the callback may call MPI functions), then takes the state again.
    /// What the caller found in the state before may have changed
    /// meanwhile at `MPI_THREAD_MULTIPLE`: it holds nothing across.
    pub fn let_go_during<R>(&mut self, f: impl FnOnce() -> R) -> R {
        match self.locked {
            // SAFETY: this call holds the lock, and takes it back below.
            true => unsafe { LOCK.unlock() },
            false => BUSY.store(false, Ordering::Relaxed),
        }
        let result = f();
        match self.locked {
            true => LOCK.lock(),
            false => BUSY.store(true, Ordering::Relaxed),
        }
        result
    }

    fn shared(&self) -> &Shared {
        // SAFETY: this call holds the state (see `Cell`).
        unsafe { &*STATE.0.get() }
    }

    fn shared_mut(&mut self) -> &mut Shared {
        // SAFETY: as in `shared`; `&mut self` keeps the reference unique.
        unsafe { &mut *STATE.0.get() }
    }
}

impl std::ops::Deref for Locked {
    type Target = State;
    fn deref(&self) -> &State {
        self.shared().0.as_deref().expect("a Locked state is initialised")
    }
}

impl std::ops::DerefMut for Locked {
    fn deref_mut(&mut self) -> &mut State {
        self.shared_mut().0.as_deref_mut().expect("a Locked state is initialised")
    }
}

impl Drop for Locked {
    /// Under `MPI_THREAD_MULTIPLE`, threads waiting outside the lock look
    /// again once a call that may have made progress lets go of it.
    #[inline]
    fn drop(&mut self) {
        if !self.locked {
            BUSY.store(false, Ordering::Relaxed);
            return;
        }
        self.let_go();
    }
}

impl Locked {
    /// Lets go of the lock this call took.
    #[inline(never)]
    fn let_go(&mut self) {
        if waiting::multiple() && !self.quiet {
            if let Some(state) = self.shared().0.as_deref() {
                waiting::progress_made(&state.bell);
            }
        }
        // SAFETY: this call took the lock (`locked`), and lets go once.
        unsafe { LOCK.unlock() };
    }
}

/// Takes the state for a call: under `MPI_THREAD_MULTIPLE` (and before
/// init, after finalize) with a lock. Below it, MPI's rule that no two
/// threads are inside the library at once (the program orders its calls)
/// does what the lock would, as MPICH relies on it: the lock's two atomic
/// read-modify-writes per call cost about as much as the rest of a small
/// call (a ping-pong's C layer is mostly them). The call only marks the
/// library busy with plain stores, which catches most programs that break
/// the rule: a call that finds it busy fails, naming the problem, instead
/// of corrupting the state.
fn enter(call: &str) -> Result<Locked> {
    if LOCKING.load(Ordering::Relaxed) {
        LOCK.lock();
        return Ok(Locked { locked: true, quiet: false, _not_send: PhantomData });
    }
    if BUSY.load(Ordering::Relaxed) {
        return Err(MpiError::new(
            class::OTHER,
            format!(
                "{call} called while another call is inside the MPI library (another thread's, or the \
                 call whose callback this is): only MPI_THREAD_MULTIPLE (MPI_Init_thread) allows \
                 concurrent calls"
            ),
        ));
    }
    BUSY.store(true, Ordering::Relaxed);
    Ok(Locked { locked: false, quiet: false, _not_send: PhantomData })
}

/// The state for a call on the short path of the most common calls
/// (see `api::p2p`): below `MPI_THREAD_MULTIPLE`, in a running library
/// (the lock is only on before init, after finalize and at
/// `MPI_THREAD_MULTIPLE`), with no other call inside. `None` sends the
/// call the general way, which says what is wrong if anything is.
#[inline]
pub fn enter_short() -> Option<Locked> {
    if LOCKING.load(Ordering::Relaxed) || BUSY.load(Ordering::Relaxed) {
        return None;
    }
    BUSY.store(true, Ordering::Relaxed);
    Some(Locked { locked: false, quiet: false, _not_send: PhantomData })
}

/// The state for a call on the short path at `MPI_THREAD_MULTIPLE`: the
/// lock, in a running library; `None` before init and after finalize (the
/// general path names the problem).
#[inline]
pub fn lock_short() -> Option<Locked> {
    LOCK.lock();
    let locked = Locked { locked: true, quiet: false, _not_send: PhantomData };
    locked.shared().0.is_some().then_some(locked)
}

/// The state of a running library, for one call; an error if MPI is not
/// initialised or was finalized.
pub fn lock(call: &str) -> Result<Locked> {
    let locked = enter(call)?;
    if locked.shared().0.is_none() {
        let when = match phase() {
            Phase::Finalized => "after MPI_Finalize",
            _ => "before MPI_Init",
        };
        return Err(MpiError::new(class::OTHER, format!("{call} called {when}")));
    }
    Ok(locked)
}

/// Installs the state of a library just initialised; below
/// `MPI_THREAD_MULTIPLE` later calls stop taking the lock.
pub fn install(state: State, multiple: bool) {
    let mut locked = enter("MPI_Init").expect("init takes the lock");
    locked.shared_mut().0 = Some(Box::new(state));
    drop(locked);
    set_phase(Phase::Running);
    LOCKING.store(multiple, Ordering::Relaxed);
}

/// Takes the state out at finalize; calls after it (from any thread)
/// take the lock again.
pub fn take() -> Option<Box<State>> {
    LOCKING.store(true, Ordering::Relaxed);
    let mut locked = enter("MPI_Finalize").expect("finalize takes the lock");
    let state = locked.shared_mut().0.take();
    drop(locked);
    set_phase(Phase::Finalized);
    state
}

impl State {
    /// One pass of the rank's progress, for a thread that waits outside
    /// the lock: true if anything moved. `slept_long`: its sleep timed
    /// out, time to look for dead peers.
    pub fn progress(&mut self, slept_long: bool) -> Result<bool> {
        let world = &self.comms.get(0).expect("the world's slot").comm;
        let moved = world.rank_context().engine().poll_outside(slept_long);
        moved.map_err(|e| MpiError::from(grappe_comm::Error::from(e)))
    }

    /// Drops the freed requests that have completed (a failed one's error
    /// is lost, as MPI says of a freed request).
    pub fn reap_freed(&mut self) {
        if self.freed.iter().any(|f| f.0.is_complete()) {
            let (done, pending): (Vec<_>, Vec<_>) =
                std::mem::take(&mut self.freed).into_iter().partition(|f| f.0.is_complete());
            for (request, keep, incoming) in done {
                if let (Ok(got), Some(incoming)) = (request.wait(), incoming) {
                    incoming.finish(got.bytes);
                }
                drop(keep);
            }
            self.freed = pending;
        }
    }

    /// The table slot of communicator `handle`.
    pub fn comm_slot(&self, handle: c_int) -> Result<usize> {
        match self.live_comm_slot(handle) {
            Some(slot) => Ok(slot),
            None if handle == abi::COMM_NULL => Err(MpiError::new(class::COMM, "MPI_COMM_NULL is not a communicator")),
            None if self.pending_comm_slot(handle).is_some() => Err(MpiError::new(
                class::COMM,
                format!("communicator {handle:#x} comes from an MPI_Comm_idup whose request has not completed"),
            )),
            None => Err(MpiError::new(class::COMM, format!("{handle:#x} is not a communicator handle (or was freed)"))),
        }
    }

    /// The slot of communicator `handle`, if it names a live one.
    #[inline]
    fn live_comm_slot(&self, handle: c_int) -> Option<usize> {
        let slot = match handle {
            abi::COMM_WORLD => 0,
            abi::COMM_SELF => 1,
            _ => abi::direct_index(kind::COMM, handle).filter(|&slot| slot >= 2)?,
        };
        self.comms.get(slot).is_some_and(|entry| !entry.pending).then_some(slot)
    }

    /// The slot of communicator `handle` for a call that only reads or
    /// sets what the rank keeps of it (error handler, name, size, rank):
    /// the communicator of an `MPI_Comm_idup` under way answers too, as
    /// under MPICH (mpi4py sets its error handler right after the call).
    pub fn local_comm_slot(&self, handle: c_int) -> Result<usize> {
        self.pending_comm_slot(handle).map_or_else(|| self.comm_slot(handle), Ok)
    }

    /// The communicator of `handle`, for the calls of [`Self::local_comm_slot`]:
    /// the group of an `MPI_Comm_idup` under way is its original's.
    pub fn local_comm(&self, handle: c_int) -> Result<&CommEntry> {
        let slot = self.local_comm_slot(handle)?;
        Ok(self.comms.get(slot).expect("checked by local_comm_slot"))
    }

    /// The slot of `handle` if it names the communicator of an
    /// `MPI_Comm_idup` under way.
    pub fn pending_comm_slot(&self, handle: c_int) -> Option<usize> {
        let slot = abi::direct_index(kind::COMM, handle).filter(|&slot| slot >= 2)?;
        self.comms.get(slot).is_some_and(|entry| entry.pending).then_some(slot)
    }

    /// The intracommunicator of `handle`: an intercommunicator is refused,
    /// naming what grappe does on one.
    pub fn intra(&self, handle: c_int) -> Result<&CommEntry> {
        let entry = self.comm(handle)?;
        match entry.comm.is_inter() {
            true => Err(crate::api::not_on_intercomm(handle)),
            false => Ok(entry),
        }
    }

    /// The communicator of `handle`, if it is one (no message: for the
    /// short path, whose caller takes the general path otherwise).
    #[inline]
    pub fn comm_if_valid(&self, handle: c_int) -> Option<&CommEntry> {
        self.comms.get(self.live_comm_slot(handle)?)
    }

    /// The communicator of `handle`.
    pub fn comm(&self, handle: c_int) -> Result<&CommEntry> {
        let slot = self.comm_slot(handle)?;
        Ok(self.comms.get(slot).expect("checked by comm_slot"))
    }

    /// The handle of a new communicator.
    pub fn add_comm(&mut self, comm: Communicator, errhandler: c_int) -> c_int {
        let slot = self.comms.insert(CommEntry::new(comm, errhandler, ""));
        abi::direct_handle(kind::COMM, slot)
    }

    /// The error handler that applies to `error`: its communicator's, or
    /// the world's.
    pub fn errhandler_for(&self, error: &MpiError) -> (c_int, Option<&Communicator>) {
        let entry = error.comm.and_then(|h| self.comm(h).ok()).or_else(|| self.comms.get(0));
        match entry {
            Some(entry) => (entry.errhandler, Some(&entry.comm)),
            None => (abi::ERRORS_ARE_FATAL, None),
        }
    }
}
