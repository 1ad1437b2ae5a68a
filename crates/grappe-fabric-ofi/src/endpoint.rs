//! An endpoint and the state of its links: credits, receive buffers,
//! reassembly, and the progress that moves them.
//!
//! All of it sits behind one mutex ([`Shared::core`]): libfabric objects
//! are opened with `FI_THREAD_DOMAIN`, and a completion read by any caller
//! may be for any link of the endpoint.
//!
//! # Matching
//! With tagged messages, a message's tag holds its class (data or
//! control) and the link's two end numbers, and each link posts its own
//! receive buffers for its peer's tags. With plain messages (a provider
//! without `FI_TAGGED`, or [`Matching::Messages`]), every link adds its
//! buffers to one pool of the endpoint, and a message finds its link by
//! the end numbers in its header (kept aside if that link is not made
//! yet).
//!
//! # Flow control
//! Each link posts [`Config::depth`] receive buffers of one fragment for
//! its peer's data, and the peer starts with as many credits (the depth
//! is in the endpoint's published name, with the fragment size and the
//! matching, which both ends must share: a link between endpoints that
//! differ is refused when it is made). A data message takes one credit,
//! so it always finds a buffer, and the receiver never relies on the
//! provider's queue of unexpected messages for data. A
//! receive buffer posted again returns its credit, in the header of the
//! next message the other way, or in a `Credit` message once half the
//! depth is owed. A record of one fragment keeps its buffer (and credit)
//! until it is consumed; the fragments of a larger record are copied into
//! the record as they come, and their buffers go back at once, unless
//! the records reassembled and not read already hold [`INBOUND_LIMIT`](crate::INBOUND_LIMIT)
//! bytes (then the peer waits for credits).
//!
//! Control messages (`Credit`, `Ping`, `Bye`) take no credit. They go to
//! [`CONTROL_DEPTH`] buffers per link (small ones when tagged, in the pool
//! otherwise) posted again as soon as read; at most
//! two `Credit` messages can be unread at once (each returns half the
//! credits), so only `Ping`s of a peer that has not read for several
//! keepalive periods can find no buffer: the endpoint asks for
//! `FI_RM_ENABLED`, under which the provider queues them instead of
//! dropping them (`ofi_rxm` keeps unexpected messages).
//!
//! # A lost peer
//! A failed completion breaks its link. But a provider may never fail a
//! send to a peer that is gone: `tcp;ofi_rxm` (libfabric 1.17) keeps the
//! sends of a peer whose connection broke, trying to connect again every
//! two seconds, refused each time, and completes nothing. So a link whose
//! posted messages see no completion for [`Config::lost_after`] breaks
//! ([`LinkError::Silent`]), and a link that sent nothing for a
//! [`Config::keepalive`] period sends a `Ping`, so that a link that only
//! receives has a message to watch. Sends may also complete while the
//! peer is unreachable (`tcp;ofi_rxm` completes them into the socket of a
//! peer whose network went down): with keepalives, a link from whose
//! peer nothing came for [`Config::lost_after`] since its last message
//! breaks too
//! ([`LinkError::Unheard`]), so a peer must drive its provider (an owner
//! computing for long drives it from another thread). The price: a live peer that reads nothing (does not drive
//! its provider) for that long while messages wait for it counts as lost,
//! as a TCP peer does under `TCP_USER_TIMEOUT`; with `udp;ofi_rxd`, whose
//! sends complete when the peer acknowledges them, a peer that does not
//! drive its provider at all counts as lost after that long. A peer that
//! closes its link sends `Bye`, and the link ends cleanly after the last
//! record.

use std::collections::{HashMap, VecDeque};
use std::os::fd::RawFd;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use crate::error::{Ends, LinkError};
use crate::inbound::{Inbound, Record};
use crate::link::Link;
use crate::name::name_to_text;
use crate::sys::{self, CallFailed, Dir, Done, Fabric, OpFailed, Post, Wanted};
use crate::wire::{self, HEADER_BYTES, Header, Kind, Published};
use crate::{MAX_PAYLOAD, Meta};

/// Receive buffers posted per link for its peer's control messages.
pub const CONTROL_DEPTH: usize = 4;

/// Largest end number: ends share a 64-bit tag with a message class.
pub const MAX_END: u32 = (1 << 30) - 1;

/// How long an endpoint dropped waits for its posted sends to complete.
const LINGER: Duration = Duration::from_secs(2);

/// How messages are matched to receive buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// Tagged messages if the provider offers them, plain messages otherwise.
    Auto,
    /// Tagged messages (`FI_TAGGED`): each link's buffers take only its
    /// peer's messages.
    Tagged,
    /// Plain messages (`FI_MSG`): every link's buffers go to one pool, and
    /// a message finds its link by its header.
    Messages,
}

/// How an endpoint is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The provider (`tcp;ofi_rxm`, `udp;ofi_rxd`...); `None` leaves the
    /// choice to libfabric, which honours `FI_PROVIDER`.
    pub provider: Option<String>,
    /// The local address to bind to (`127.0.0.1`...); `None` leaves it to
    /// the provider.
    pub node: Option<String>,
    /// Tagged or plain messages.
    pub matching: Matching,
    /// Payload bytes of one message: larger records travel in fragments.
    /// Both ends of a link must have the same. 256 KiB by default, the
    /// engine's fragment on TCP links: with `tcp;ofi_rxm`, 64 KiB
    /// messages (its segmented protocol) move a third of what 256 KiB
    /// ones (its rendezvous) do.
    pub fragment: usize,
    /// Data receive buffers posted per link, and so the credits of its
    /// peer: 16 by default, 4 MiB of buffers per link with the default
    /// fragment (the TCP link asks 4 MiB of socket buffer each way).
    pub depth: usize,
    /// An idle link sends a `Ping` this often (`None`: never).
    pub keepalive: Option<Duration>,
    /// A link whose posted messages have not moved for this long breaks:
    /// its peer is gone, or has stopped reading (see the module's
    /// documentation).
    pub lost_after: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            provider: None,
            node: None,
            matching: Matching::Auto,
            fragment: 256 << 10,
            depth: 16,
            keepalive: Some(Duration::from_secs(1)),
            lost_after: Duration::from_secs(60),
        }
    }
}

impl Config {
    /// The default settings with provider `provider` bound to `node`.
    pub fn new(provider: &str, node: &str) -> Config {
        Config { provider: Some(provider.to_owned()), node: Some(node.to_owned()), ..Config::default() }
    }

    fn check(&self) -> Result<(), LinkError> {
        let bad = |setting, value, detail| Err(LinkError::Config { setting, value, detail });
        if self.fragment == 0 || self.fragment > MAX_PAYLOAD {
            return bad("fragment", self.fragment, "between 1 byte and MAX_PAYLOAD");
        }
        if self.depth == 0 || self.depth > 1 << 16 {
            return bad("depth", self.depth, "between 1 and 65536 buffers");
        }
        Ok(())
    }
}

/// A libfabric endpoint of this process, and its links. Cloning gives
/// another handle on the same endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub(crate) shared: Arc<Shared>,
}

/// Called with the ends of a link for which a progress call brought
/// records (the first since its owner last took them all), room to send,
/// or its end; called on the caller's thread, outside the endpoint's lock.
pub type ArrivalFn = Box<dyn Fn(Ends) + Send + Sync>;

pub(crate) struct Shared {
    core: Mutex<Core>,
    pub provider: String,
    pub name: Vec<u8>,
    pub wait_fd: Option<RawFd>,
    pub tagged: bool,
    arrival: OnceLock<ArrivalFn>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("provider", &self.provider).field("tagged", &self.tagged).finish_non_exhaustive()
    }
}

/// The endpoint's state, locked; the news for links it gathered are
/// announced ([`Endpoint::on_arrival`]) once the lock is released.
pub(crate) struct CoreGuard<'a> {
    shared: &'a Shared,
    guard: Option<MutexGuard<'a, Core>>,
}

impl std::ops::Deref for CoreGuard<'_> {
    type Target = Core;
    fn deref(&self) -> &Core {
        self.guard.as_ref().expect("held until dropped")
    }
}

impl std::ops::DerefMut for CoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut Core {
        self.guard.as_mut().expect("held until dropped")
    }
}

impl Drop for CoreGuard<'_> {
    fn drop(&mut self) {
        let mut guard = self.guard.take().expect("held until dropped");
        if guard.news.is_empty() {
            return;
        }
        let news = std::mem::take(&mut guard.news);
        drop(guard);
        if let Some(hook) = self.shared.arrival.get() {
            for ends in news {
                hook(ends);
            }
        }
    }
}

impl Endpoint {
    /// Opens an endpoint: the first reliable-datagram endpoint libfabric
    /// offers for `config`.
    pub fn open(config: &Config) -> Result<Endpoint, LinkError> {
        config.check()?;
        let wanted = |tagged| Wanted { provider: config.provider.as_deref(), node: config.node.as_deref(), tagged };
        let opened = match config.matching {
            Matching::Tagged => Fabric::open(wanted(true)),
            Matching::Messages => Fabric::open(wanted(false)),
            Matching::Auto => Fabric::open(wanted(true)).or_else(|_| Fabric::open(wanted(false))),
        };
        let fabric = opened.map_err(|failed| match failed.op {
            "fi_getinfo" => LinkError::NoProvider {
                provider: config.provider.clone(),
                node: config.node.clone(),
                text: failed.text,
            },
            _ => call_error(config.provider.as_deref().unwrap_or("(libfabric's choice)"), failed),
        })?;
        let provider = fabric.provider().to_owned();
        let address = fabric.name().map_err(|failed| call_error(&provider, failed))?;
        let (wait_fd, tagged) = (fabric.wait_fd(), fabric.tagged());
        let name = Published { fragment: config.fragment as u32, depth: config.depth as u32, tagged, address }.encode();
        let core = Core::new(fabric, config);
        let arrival = OnceLock::new();
        Ok(Endpoint { shared: Arc::new(Shared { core: Mutex::new(core), provider, name, wait_fd, tagged, arrival }) })
    }

    /// The endpoint's name, to publish: a peer's [`Endpoint::link`] takes
    /// it. The provider's address (`fi_getname`), after the settings a
    /// peer's links must agree with (fragment, tagged or plain messages)
    /// and this endpoint's depth (its peers' credits).
    pub fn name(&self) -> &[u8] {
        &self.shared.name
    }

    /// The provider's name (`tcp;ofi_rxm`...).
    pub fn provider(&self) -> &str {
        &self.shared.provider
    }

    /// True if the links use tagged messages.
    pub fn tagged(&self) -> bool {
        self.shared.tagged
    }

    /// An endpoint's address as libfabric writes it
    /// (`fi_sockaddr_in://...`), from its name.
    pub fn address_text(&self, name: &[u8]) -> String {
        match Published::decode(name) {
            Ok(published) => self.shared.lock().fabric.address_text(&published.address),
            Err(_) => name_to_text(name),
        }
    }

    /// Makes the link `ends` to the endpoint named `peer`: the peer makes
    /// the same link with the ends reversed. Records may be pushed at once;
    /// they wait in the peer's provider until its side of the link exists.
    pub fn link(&self, peer: &[u8], ends: Ends) -> Result<Link, LinkError> {
        let (id, fate) = self.shared.lock().add_link(&self.shared.provider, peer, ends)?;
        Ok(Link::new(Arc::clone(&self.shared), id, fate))
    }

    /// The descriptor to watch (epoll) for completions: readable when
    /// the endpoint may have news. Check [`Endpoint::try_wait`] before
    /// sleeping on it. None if the provider's completion queue offers no
    /// descriptor (`udp;ofi_rxd` in libfabric 1.17): its links must be
    /// polled.
    pub fn raw_fd(&self) -> Option<RawFd> {
        self.shared.wait_fd
    }

    /// True if the caller may sleep until [`Endpoint::raw_fd`] is readable:
    /// no completion waits, nothing needs progress, no record sits unread
    /// (`fi_trywait`). False: peek the links first. Always false for a
    /// provider without a descriptor.
    pub fn try_wait(&self) -> Result<bool, LinkError> {
        self.shared.try_wait()
    }

    /// Reads the completions and moves what waits: links progress without
    /// their owners calling them.
    pub fn progress(&self) {
        self.shared.lock().progress();
    }

    /// Starts a thread that drives the endpoint ([`Endpoint::progress`])
    /// every `every` for as long as the endpoint or one of its links
    /// exists: its links ping their peers and notice a lost one while
    /// their owners compute without calling them (a peer hears from a
    /// live process whatever its ranks do, see [`LinkError::Unheard`]).
    pub fn keep_progressing(&self, every: Duration) -> std::io::Result<()> {
        let shared = Arc::downgrade(&self.shared);
        std::thread::Builder::new().name("grappe-ofi-progress".into()).spawn(move || {
            loop {
                std::thread::sleep(every);
                match shared.upgrade() {
                    Some(shared) => shared.lock().progress(),
                    None => return,
                }
            }
        })?;
        Ok(())
    }

    /// Calls `hook` with the ends of a link for which a progress call
    /// brought records (the first since its owner took them all), credits
    /// that let its backlog go, or its end. Any caller's progress reads
    /// the completions of every link of the endpoint, and so drains the
    /// descriptor others may sleep on: an engine whose threads share an
    /// endpoint wakes a link's owner from here. Set once: false if a hook
    /// was set already.
    pub fn on_arrival(&self, hook: ArrivalFn) -> bool {
        let set = self.shared.arrival.set(hook).is_ok();
        if set {
            self.shared.lock().announce = true;
        }
        set
    }
}

/// The providers libfabric offers for an endpoint bound to `node` (any
/// local address if `None`), each named once, libfabric's preferred
/// first: what to name when the one asked for is not there.
pub fn providers(node: Option<&str>) -> Vec<String> {
    sys::providers(node)
}

impl Shared {
    /// Locks the endpoint's state (see [`CoreGuard`]).
    pub fn lock(&self) -> CoreGuard<'_> {
        CoreGuard { shared: self, guard: Some(self.core.lock()) }
    }

    pub fn try_wait(&self) -> Result<bool, LinkError> {
        let mut core = self.lock();
        core.progress();
        // Without a descriptor nothing wakes a sleeper: never safe.
        if core.ready_total > 0 || self.wait_fd.is_none() {
            return Ok(false);
        }
        core.fabric.try_wait().map_err(|failed| call_error(&self.provider, failed))
    }
}

/// A message waiting to be posted.
#[derive(Debug)]
struct Outgoing {
    buf: Box<[u8]>,
    len: usize,
    kind: Kind,
}

/// A plain message for a link not made yet.
#[derive(Debug)]
struct Stray {
    header: Header,
    buf: Box<[u8]>,
    len: usize,
}

/// One link's state in the endpoint.
#[derive(Debug)]
struct LinkState {
    peer: u64,
    peer_text: String,
    ends: Ends,
    /// Halves still held by the caller; closed at 0.
    halves: u8,
    fate: Arc<Fate>,
    // Sending.
    credits: u32,
    /// The peer's receive buffers for this link: the most credits it gives.
    peer_depth: u32,
    next_seq: u32,
    control: VecDeque<Outgoing>,
    backlog: VecDeque<Outgoing>,
    backlog_bytes: usize,
    sends_posted: usize,
    /// Receive buffers posted again since credits were last returned.
    owed: u32,
    last_send: Instant,
    /// Since when posted sends wait, none completing.
    stalled_since: Option<Instant>,
    /// When the peer's last message came; none before its first (a peer
    /// still starting is waited for by whoever made the link).
    last_heard: Option<Instant>,
    // Receiving.
    recvs_posted: usize,
    /// Buffers the provider refused for now, to post again.
    unposted: Vec<(Box<[u8]>, bool)>,
    inbound: Inbound,
}

impl LinkState {
    /// True if nothing more is to be sent on the link.
    fn dead(&self) -> bool {
        self.halves == 0 || self.fate.broken.get().is_some() || self.fate.peer_closed.get().is_some()
    }
}

/// How a link ended, shared with its halves.
#[derive(Debug, Default)]
pub(crate) struct Fate {
    /// Why the link broke: both halves report it.
    pub broken: OnceLock<LinkError>,
    /// The peer closed its side: nothing more can be sent, while the
    /// receiving half reads on up to the peer's last record.
    pub peer_closed: OnceLock<LinkError>,
}

/// Everything behind the endpoint's mutex.
#[derive(Debug)]
pub(crate) struct Core {
    fabric: Fabric,
    links: Vec<Option<LinkState>>,
    by_ends: HashMap<Ends, usize>,
    /// Plain messages for a link not made yet (by its ends as seen here).
    orphans: HashMap<Ends, Vec<Stray>>,
    done: Vec<Done>,
    spare: Vec<Box<[u8]>>,
    sends_posted: usize,
    pub ready_total: usize,
    fragment: usize,
    depth: u32,
    keepalive: Option<Duration>,
    lost_after: Duration,
    last_keepalive: Instant,
    failure: Option<LinkError>,
    /// True once an arrival hook is set: `news` is gathered.
    announce: bool,
    /// Links to announce when the lock is released.
    news: Vec<Ends>,
}

/// The token of the receive buffers of the plain-message pool.
const POOL: u64 = u64::MAX;

fn token(id: usize, control: bool) -> u64 {
    (id as u64) << 1 | u64::from(control)
}

/// The tag of messages from end `from` to end `to`: control messages
/// apart, so that they never take a data buffer.
fn tag(control: bool, from: u32, to: u32) -> u64 {
    u64::from(control) << 60 | u64::from(from) << 30 | u64::from(to)
}

impl Core {
    fn new(fabric: Fabric, config: &Config) -> Core {
        Core {
            fabric,
            links: Vec::new(),
            by_ends: HashMap::new(),
            orphans: HashMap::new(),
            done: Vec::new(),
            spare: Vec::new(),
            sends_posted: 0,
            ready_total: 0,
            fragment: config.fragment,
            depth: config.depth as u32,
            keepalive: config.keepalive,
            lost_after: config.lost_after,
            last_keepalive: Instant::now(),
            failure: None,
            announce: false,
            news: Vec::new(),
        }
    }

    fn provider(&self) -> String {
        self.fabric.provider().to_owned()
    }

    fn data_bytes(&self) -> usize {
        HEADER_BYTES + self.fragment
    }

    fn add_link(&mut self, provider: &str, peer: &[u8], ends: Ends) -> Result<(usize, Arc<Fate>), LinkError> {
        let setup = |detail: String| LinkError::Setup {
            provider: provider.to_owned(),
            peer: peer.iter().map(|b| format!("{b:02x}")).collect(),
            ends,
            detail,
        };
        if ends.local > MAX_END || ends.remote > MAX_END {
            return Err(setup(format!("end numbers go up to {MAX_END}")));
        }
        if self.by_ends.contains_key(&ends) {
            return Err(setup("this endpoint has a link with these ends already".into()));
        }
        let published = Published::decode(peer).map_err(setup)?;
        if published.fragment as usize != self.fragment || published.tagged != self.fabric.tagged() {
            let kind = |tagged| if tagged { "tagged" } else { "plain" };
            return Err(setup(format!(
                "the peer's links carry fragments of {} bytes in {} messages, this endpoint's {} bytes in {} ones",
                published.fragment,
                kind(published.tagged),
                self.fragment,
                kind(self.fabric.tagged())
            )));
        }
        if published.depth == 0 {
            return Err(setup("the peer posts no receive buffer (depth 0)".into()));
        }
        let addr = self
            .fabric
            .insert(&published.address)
            .map_err(|failed| setup(format!("{}: {}", failed.op, failed.text)))?;
        let fate = Arc::new(Fate::default());
        let state = LinkState {
            peer: addr,
            peer_text: self.fabric.address_text(&published.address),
            ends,
            halves: 2,
            fate: Arc::clone(&fate),
            credits: published.depth,
            peer_depth: published.depth,
            next_seq: 0,
            control: VecDeque::new(),
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            sends_posted: 0,
            owed: 0,
            last_send: Instant::now(),
            stalled_since: None,
            last_heard: None,
            recvs_posted: 0,
            unposted: Vec::new(),
            inbound: Inbound::new(self.fragment, self.depth),
        };
        let id = match self.links.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                self.links.push(None);
                self.links.len() - 1
            }
        };
        self.links[id] = Some(state);
        self.by_ends.insert(ends, id);
        let buffers = (0..self.depth as usize).map(|_| false).chain((0..CONTROL_DEPTH).map(|_| true));
        for control in buffers {
            let bytes = if control && self.fabric.tagged() { HEADER_BYTES } else { self.data_bytes() };
            self.post_recv(id, vec![0; bytes].into_boxed_slice(), control);
        }
        // The first buffers owe nothing: the peer starts with their credits.
        if let Some(link) = self.links[id].as_mut() {
            link.owed = 0;
        }
        if let Some(early) = self.orphans.remove(&ends) {
            for Stray { header, buf, len } in early {
                self.arrive(id, header, buf, len);
            }
        }
        match fate.broken.get() {
            Some(error) => {
                let error = error.clone();
                self.close(id);
                Err(error)
            }
            None => Ok((id, fate)),
        }
    }

    /// Reads the completions and acts on them; sends keepalives.
    pub fn progress(&mut self) {
        if self.failure.is_some() {
            return;
        }
        let mut done = std::mem::take(&mut self.done);
        if let Err(failed) = self.fabric.read_completions(&mut done) {
            let error = call_error(&self.provider(), failed);
            self.fail_all(error);
        }
        for completion in done.drain(..) {
            self.complete(completion);
        }
        self.done = done;
        self.keep_alive();
    }

    fn fail_all(&mut self, error: LinkError) {
        for link in self.links.iter_mut().flatten() {
            let _ = link.fate.broken.set(error.clone());
            if self.announce && link.halves > 0 {
                self.news.push(link.ends);
            }
        }
        self.failure = Some(error);
    }

    fn complete(&mut self, done: Done) {
        match done.dir {
            Dir::Send => self.sent(done),
            Dir::Recv => self.received(done),
        }
    }

    fn sent(&mut self, done: Done) {
        self.sends_posted -= 1;
        let id = (done.token >> 1) as usize;
        if done.buf.len() == self.data_bytes() {
            self.spare.push(done.buf);
        }
        let Some(link) = self.links[id].as_mut() else { return };
        link.sends_posted -= 1;
        let waiting = link.sends_posted > 0 || !link.control.is_empty() || !link.backlog.is_empty();
        link.stalled_since = waiting.then(Instant::now);
        if let Some(failure) = done.failure {
            self.fail(id, "sending to", &failure);
        }
        self.forget_if_done(id);
    }

    fn received(&mut self, done: Done) {
        let pool = done.token == POOL;
        let id = (done.token >> 1) as usize;
        let control = done.token & 1 == 1;
        if !pool && let Some(link) = self.links[id].as_mut() {
            link.recvs_posted -= 1;
        }
        if let Some(failure) = done.failure {
            match pool {
                // A plain message that failed (truncated: a peer with
                // larger fragments) names no link: every link may be the
                // one, and the pool has lost a buffer.
                true if !failure.is_cancelled() => {
                    let failed = CallFailed { op: "receiving a plain message", code: failure.code, text: failure.text };
                    let error = call_error(&self.provider(), failed);
                    self.fail_all(error);
                }
                true => {}
                false => {
                    if !failure.is_cancelled() {
                        self.fail(id, "receiving from", &failure);
                    }
                    self.forget_if_done(id);
                }
            }
            return;
        }
        let header = match wire::decode(&done.buf[..done.len]) {
            Ok(header) => header,
            Err(detail) => {
                // The link is known only by the buffer's token.
                match pool {
                    true => self.post_pool(done.buf),
                    false => self.protocol(id, detail),
                }
                return;
            }
        };
        let ends = Ends { local: header.to, remote: header.from };
        if pool {
            match self.by_ends.get(&ends) {
                Some(&target) => self.arrive(target, header, done.buf, done.len),
                None => self.orphans.entry(ends).or_default().push(Stray { header, buf: done.buf, len: done.len }),
            }
            return;
        }
        let Some(link) = self.links[id].as_ref() else { return };
        if link.halves == 0 {
            self.forget_if_done(id);
            return;
        }
        if ends != link.ends {
            return self.protocol(id, format!("a message for link {ends} on link {}", link.ends));
        }
        if header.kind.is_data() == control {
            return self.protocol(id, format!("a {:?} message with the tag of the other class", header.kind));
        }
        self.arrive(id, header, done.buf, done.len);
    }

    /// A message of link `id`, its buffer to keep or post again.
    fn arrive(&mut self, id: usize, header: Header, buf: Box<[u8]>, len: usize) {
        let Some(link) = self.links[id].as_mut() else { return };
        link.last_heard = Some(Instant::now());
        if self.announce && header.credits > 0 && !link.backlog.is_empty() {
            self.news.push(link.ends);
        }
        link.credits = link.credits.saturating_add(header.credits);
        if link.credits > link.peer_depth {
            let (credits, given) = (link.credits, link.peer_depth);
            return self.protocol(id, format!("{credits} credits returned, more than the {given} given"));
        }
        match header.kind {
            Kind::Credit | Kind::Ping => self.post_recv(id, buf, true),
            Kind::Bye => {
                link.inbound.bye(header.seq);
                let closed = LinkError::Closed {
                    provider: self.fabric.provider().to_owned(),
                    peer: link.peer_text.clone(),
                    ends: link.ends,
                    records: header.seq,
                };
                let _ = link.fate.peer_closed.set(closed);
                if self.announce {
                    self.news.push(link.ends);
                }
                link.backlog.clear();
                link.control.clear();
                link.backlog_bytes = 0;
                self.post_recv(id, buf, true);
            }
            Kind::Data | Kind::More => {
                let mut freed = Vec::new();
                let before = link.inbound.ready();
                let taken = link.inbound.arrive(header, buf, len, &mut freed);
                self.ready_total += link.inbound.ready() - before;
                if self.announce && before == 0 && link.inbound.ready() > 0 {
                    self.news.push(link.ends);
                }
                self.post_freed(id, freed);
                if let Err(detail) = taken {
                    return self.protocol(id, detail);
                }
            }
        }
        self.pump(id);
    }

    /// Posts again the data buffers link `id`'s records freed.
    fn post_freed(&mut self, id: usize, freed: Vec<Box<[u8]>>) {
        for buf in freed {
            self.post_recv(id, buf, false);
        }
    }

    /// Posts a receive buffer for link `id` (to the pool for plain
    /// messages); a posted data buffer owes the peer a credit.
    fn post_recv(&mut self, id: usize, buf: Box<[u8]>, control: bool) {
        if !control && let Some(link) = self.links[id].as_mut() {
            link.owed += 1;
        }
        if !self.fabric.tagged() {
            return self.post_pool(buf);
        }
        let Some(link) = self.links[id].as_mut() else { return };
        if link.halves == 0 {
            return;
        }
        let (from, tag) = (link.peer, tag(control, link.ends.remote, link.ends.local));
        match self.fabric.post_recv(buf, from, tag, token(id, control)) {
            Ok(Post::Taken) => link.recvs_posted += 1,
            Ok(Post::Busy(buf)) => link.unposted.push((buf, control)),
            Err(failed) => self.fail_call(id, failed),
        }
    }

    fn post_pool(&mut self, buf: Box<[u8]>) {
        match self.fabric.post_recv(buf, sys::ADDR_ANY, 0, POOL) {
            Ok(Post::Taken) => {}
            // Plain messages: the pool is the endpoint's, kept by the
            // first link's retries.
            Ok(Post::Busy(buf)) => match self.links.iter_mut().flatten().next() {
                Some(link) => link.unposted.push((buf, false)),
                None => drop(buf),
            },
            Err(failed) => {
                let error = call_error(&self.provider(), failed);
                self.fail_all(error);
            }
        }
    }

    /// Posts what link `id` has to send, as far as credits and the
    /// provider allow; returns credits when half the depth is owed.
    fn pump(&mut self, id: usize) {
        let Some(link) = self.links[id].as_mut() else { return };
        if link.dead() && link.halves > 0 {
            return;
        }
        for (buf, control) in std::mem::take(&mut link.unposted) {
            if self.fabric.tagged() {
                self.post_recv_again(id, buf, control);
            } else {
                self.post_pool(buf);
            }
        }
        let threshold = self.depth.div_ceil(2);
        let Some(link) = self.links[id].as_mut() else { return };
        let idle = link.backlog.is_empty() || link.credits == 0;
        if link.owed >= threshold && idle && link.halves > 0 {
            let message = control_message(Kind::Credit, link.ends, 0);
            link.control.push_back(message);
        }
        while self.post_next(id) {}
    }

    /// Posts a buffer the provider refused before (it owes no new credit).
    fn post_recv_again(&mut self, id: usize, buf: Box<[u8]>, control: bool) {
        let link = self.links[id].as_mut().expect("a live link");
        let (from, tag) = (link.peer, tag(control, link.ends.remote, link.ends.local));
        match self.fabric.post_recv(buf, from, tag, token(id, control)) {
            Ok(Post::Taken) => link.recvs_posted += 1,
            Ok(Post::Busy(buf)) => link.unposted.push((buf, control)),
            Err(failed) => self.fail_call(id, failed),
        }
    }

    /// Posts the next control message, or data message if a credit allows;
    /// false when nothing more can go now.
    fn post_next(&mut self, id: usize) -> bool {
        let link = self.links[id].as_mut().expect("a live link");
        let from_control = !link.control.is_empty();
        let queue = if from_control { &mut link.control } else { &mut link.backlog };
        let Some(mut message) = queue.pop_front() else { return false };
        let data = message.kind.is_data();
        if data && link.credits == 0 {
            link.backlog.push_front(message);
            return false;
        }
        wire::set_credits(link.owed, &mut message.buf);
        // A data message's number, or in a Bye the count of data messages.
        if data || message.kind == Kind::Bye {
            wire::set_seq(link.next_seq, &mut message.buf);
        }
        let control = !data;
        let sent_tag = tag(control, link.ends.local, link.ends.remote);
        let payload = message.len - HEADER_BYTES;
        match self.fabric.post_send(message.buf, message.len, link.peer, sent_tag, token(id, control)) {
            Ok(Post::Taken) => {
                if data {
                    link.credits -= 1;
                    link.next_seq = link.next_seq.wrapping_add(1);
                    link.backlog_bytes -= payload;
                }
                link.owed = 0;
                link.sends_posted += 1;
                link.last_send = Instant::now();
                link.stalled_since.get_or_insert(link.last_send);
                self.sends_posted += 1;
                true
            }
            Ok(Post::Busy(buf)) => {
                // The provider refuses for now (tcp;ofi_rxm does while it
                // connects): a stall too if it lasts.
                link.stalled_since.get_or_insert_with(Instant::now);
                let queue = if from_control { &mut link.control } else { &mut link.backlog };
                queue.push_front(Outgoing { buf, ..message });
                false
            }
            Err(failed) => {
                self.fail_call(id, failed);
                false
            }
        }
    }

    /// Sends a `Ping` on every link idle for a keepalive period, and
    /// breaks the links whose posted messages have not moved for
    /// [`Config::lost_after`].
    fn keep_alive(&mut self) {
        let now = Instant::now();
        let every = self.keepalive.unwrap_or(self.lost_after).min(self.lost_after) / 4;
        if now.duration_since(self.last_keepalive) < every {
            return;
        }
        self.last_keepalive = now;
        for id in 0..self.links.len() {
            let Some(link) = self.links[id].as_mut() else { continue };
            if link.dead() {
                continue;
            }
            // A live peer's link pings at least every keepalive period:
            // silence that long (with keepalives) means it is gone, even
            // if our own sends still complete (tcp;ofi_rxm completes them
            // into the socket of a peer whose network is down).
            if let Some(heard) = link.last_heard
                && self.keepalive.is_some()
                && now.duration_since(heard) >= self.lost_after
            {
                let error = LinkError::Unheard {
                    provider: self.fabric.provider().to_owned(),
                    peer: link.peer_text.clone(),
                    ends: link.ends,
                    after: now.duration_since(heard),
                };
                self.break_link(id, error);
                continue;
            }
            if let Some(since) = link.stalled_since
                && now.duration_since(since) >= self.lost_after
            {
                let error = LinkError::Silent {
                    provider: self.fabric.provider().to_owned(),
                    peer: link.peer_text.clone(),
                    ends: link.ends,
                    waiting: link.sends_posted + link.control.len() + link.backlog.len(),
                    after: now.duration_since(since),
                };
                self.break_link(id, error);
                continue;
            }
            if !link.control.is_empty() || (!link.backlog.is_empty() && link.credits > 0) {
                self.pump(id);
                continue;
            }
            // Pings go whenever nothing went for a period, also while
            // records wait for credits: the peer hears from us either way.
            if let Some(period) = self.keepalive
                && now.duration_since(link.last_send) >= period
            {
                let message = control_message(Kind::Ping, link.ends, 0);
                link.control.push_back(message);
                self.pump(id);
            }
        }
    }

    fn fail(&mut self, id: usize, op: &'static str, failure: &OpFailed) {
        let provider = self.provider();
        let Some(link) = self.links[id].as_mut() else { return };
        let error = LinkError::Failed {
            provider,
            peer: link.peer_text.clone(),
            ends: link.ends,
            op,
            code: failure.code,
            text: failure.text.clone(),
        };
        self.break_link(id, error);
    }

    fn fail_call(&mut self, id: usize, failed: CallFailed) {
        let failure = OpFailed { code: failed.code, text: format!("{}: {}", failed.op, failed.text) };
        self.fail(id, "posting for", &failure);
    }

    fn protocol(&mut self, id: usize, detail: String) {
        let provider = self.provider();
        let Some(link) = self.links[id].as_ref() else { return };
        let error = LinkError::Protocol { provider, peer: link.peer_text.clone(), ends: link.ends, detail };
        self.break_link(id, error);
    }

    /// Link `id` takes nothing more: what waits to be sent is dropped.
    fn break_link(&mut self, id: usize, error: LinkError) {
        let Some(link) = self.links[id].as_mut() else { return };
        let _ = link.fate.broken.set(error);
        if self.announce && link.halves > 0 {
            self.news.push(link.ends);
        }
        link.backlog.clear();
        link.control.clear();
        link.backlog_bytes = 0;
    }

    /// Link `id` lost its last half: says `Bye` to the peer, gives back
    /// its receive buffers, and goes once its operations complete.
    pub fn close(&mut self, id: usize) {
        let Some(link) = self.links[id].as_mut() else { return };
        link.halves = 0;
        self.by_ends.remove(&link.ends);
        self.ready_total -= link.inbound.ready();
        link.inbound = Inbound::new(self.fragment, self.depth);
        link.backlog.clear();
        link.backlog_bytes = 0;
        if link.fate.broken.get().is_none() && link.fate.peer_closed.get().is_none() {
            link.control.clear();
            let bye = control_message(Kind::Bye, link.ends, 0);
            link.control.push_back(bye);
            while self.post_next(id) {}
        }
        self.fabric.cancel_recvs(token(id, false));
        self.fabric.cancel_recvs(token(id, true));
        self.forget_if_done(id);
    }

    fn forget_if_done(&mut self, id: usize) {
        if let Some(link) = self.links[id].as_ref()
            && link.halves == 0
            && link.sends_posted == 0
            && link.recvs_posted == 0
        {
            self.links[id] = None;
        }
    }

    // ---- for the halves of a link ----

    /// Queues a record for link `id`, in fragments already built.
    pub fn queue(&mut self, id: usize, messages: Vec<(Box<[u8]>, usize)>, kind_first: Kind) {
        let link = self.links[id].as_mut().expect("a link whose half is alive");
        for (i, (buf, len)) in messages.into_iter().enumerate() {
            let kind = if i == 0 { kind_first } else { Kind::More };
            link.backlog_bytes += len - HEADER_BYTES;
            link.backlog.push_back(Outgoing { buf, len, kind });
        }
        self.pump(id);
    }

    /// A buffer for a data message, from the spares.
    pub fn data_buffer(&mut self) -> Box<[u8]> {
        self.spare.pop().unwrap_or_else(|| vec![0; HEADER_BYTES + self.fragment].into_boxed_slice())
    }

    pub fn fragment(&self) -> usize {
        self.fragment
    }

    pub fn backlog_bytes(&self, id: usize) -> usize {
        self.links[id].as_ref().map_or(0, |link| link.backlog_bytes)
    }

    /// True if link `id` has messages queued or posted.
    pub fn sending(&self, id: usize) -> bool {
        self.links[id].as_ref().is_some_and(|link| !link.dead() && (!link.backlog.is_empty() || link.sends_posted > 0))
    }

    pub fn flush(&mut self, id: usize) {
        self.progress();
        self.pump(id);
    }

    /// The next record of link `id`, or why none will come.
    pub fn take(&mut self, id: usize) -> Result<Option<Record>, LinkError> {
        self.progress();
        let provider = self.provider();
        let link = self.links[id].as_mut().expect("a link whose half is alive");
        let mut freed = Vec::new();
        let before = link.inbound.ready();
        let taken = link.inbound.take(&mut freed);
        // Reading a reassembled record may let the next ones in.
        self.ready_total = self.ready_total + link.inbound.ready() - before;
        let outcome = match taken {
            Ok(Some(record)) => Ok(Some(record)),
            Ok(None) => match (link.fate.broken.get(), link.inbound.ended()) {
                (Some(error), _) => Err(error.clone()),
                (None, Some(records)) => {
                    Err(LinkError::Closed { provider, peer: link.peer_text.clone(), ends: link.ends, records })
                }
                (None, None) => Ok(None),
            },
            Err(detail) => {
                self.post_freed(id, freed);
                self.protocol(id, detail);
                let link = self.links[id].as_ref().expect("a link whose half is alive");
                return Err(link.fate.broken.get().expect("broken just now").clone());
            }
        };
        self.post_freed(id, freed);
        self.pump(id);
        outcome
    }

    /// A record's receive buffer, read: posted again.
    pub fn give_back(&mut self, id: usize, buf: Box<[u8]>) {
        self.post_recv(id, buf, false);
        self.pump(id);
    }

    /// One half of link `id` is dropped.
    pub fn drop_half(&mut self, id: usize) {
        let Some(link) = self.links[id].as_mut() else { return };
        link.halves -= 1;
        if link.halves == 0 {
            self.close(id);
        }
    }

    pub fn ends(&self, id: usize) -> Ends {
        self.links[id].as_ref().expect("a link whose half is alive").ends
    }

    pub fn peer_text(&self, id: usize) -> String {
        self.links[id].as_ref().map(|link| link.peer_text.clone()).unwrap_or_default()
    }
}

impl Drop for Core {
    /// Waits a little for posted sends (the `Bye`s above all) to leave:
    /// closing the endpoint drops them.
    fn drop(&mut self) {
        let deadline = Instant::now() + LINGER;
        while self.sends_posted > 0 && self.failure.is_none() && Instant::now() < deadline {
            self.progress();
            std::thread::yield_now();
        }
    }
}

fn control_message(kind: Kind, ends: Ends, seq: u32) -> Outgoing {
    let mut buf = vec![0; HEADER_BYTES].into_boxed_slice();
    let header = Header { meta: [0; 4], record_len: 0, seq, credits: 0, kind, from: ends.local, to: ends.remote };
    wire::encode(&header, &mut buf);
    Outgoing { buf, len: HEADER_BYTES, kind }
}

/// The header of a data message of link `ends`; the sequence number and
/// credits are written when it is posted.
pub(crate) fn data_header(ends: Ends, meta: Meta, record_len: usize, kind: Kind) -> Header {
    Header { meta, record_len: record_len as u32, seq: 0, credits: 0, kind, from: ends.local, to: ends.remote }
}

pub(crate) fn call_error(provider: &str, failed: CallFailed) -> LinkError {
    LinkError::Call { provider: provider.to_owned(), op: failed.op, code: failed.code, text: failed.text }
}
