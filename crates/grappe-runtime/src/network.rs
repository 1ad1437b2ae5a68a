//! The network links of a job across hosts: one TCP connection between
//! every rank and every rank of another host, made at start-up through the
//! process manager's key-value space, and the watcher that wakes a
//! sleeping rank when one of its connections has something for it.
//! `GRAPPE_FABRIC` ([`choice`]) may put libfabric in TCP's place (`ofi`,
//! in a build with the cargo feature `libfabric`): one endpoint per
//! process and a link over it to every rank of another host, set up the
//! same way (see the `ofi` module), watched by the same watcher.
//!
//! Set-up (between the fences of [`crate::job`]):
//!
//! 1. every process listens on one address and publishes it
//!    (`grappe-tcp-P`); process 0 publishes the job's secret
//!    (`grappe-secret`), which only the job's processes can read;
//! 2. after the fence, for each pair of ranks on different hosts the lower
//!    rank connects to the higher one's process, naming both ranks, and the
//!    two prove to each other that they hold the secret: a stranger cannot
//!    join the job, nor pass for one of its ranks. With
//!    `GRAPPE_TCP_CONNECT=lazy` ([`on_demand`]), each pair connects the
//!    same way on its first message instead, whichever rank sends first.
//!
//! The address is `GRAPPE_NET_ADDR` if set, the loopback address for
//! emulated hosts (`GRAPPE_EMULATED_HOSTS`), and otherwise the first IPv4
//! address of an interface that is up and not the loopback.
//!
//! A host cut off is found by heartbeats between hosts ([`heartbeat`]),
//! within about a second, whatever the fabric.
//!
//! The TCP links may emulate a slower or failing network ([`faults`]:
//! `GRAPPE_NET_DELAY_US`, `GRAPPE_NET_BANDWIDTH`, `GRAPPE_NET_DROP_AFTER_MS`).

mod choice;
mod faults;
mod heartbeat;
#[cfg(feature = "libfabric")]
mod ofi;
mod on_demand;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::ops::Range;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use grappe_fabric::link::{Inbox, Outbox};
use grappe_fabric::{Doorbell, doorbell};
use grappe_fabric_tcp::{Hello, Interest, Link, LinkError, LinkIn, LinkOut, Listener, Secret, Watch};
use grappe_launch::Pmi;
use grappe_proto::RemoteLink;
use grappe_settings::{SettingError, Vars};

pub(crate) use self::choice::FabricChoice;
use self::faults::NetFaults;
use self::heartbeat::{Heartbeats, Ring, Silence};
use self::on_demand::{ConnectWhen, Hooks, LinkSetup, OnDemand};
use crate::StartError;
use crate::job::{Job, Placement};

type Result<T, E = StartError> = std::result::Result<T, E>;

/// How long the whole set-up of the links may take: every process is
/// started by then, or something is wrong.
const SET_UP: Duration = Duration::from_secs(60);
/// How long one authentication may take.
pub(crate) const HANDSHAKE: Duration = Duration::from_secs(10);

/// A process ready for its peers' links, its addresses published: its
/// fabric's, and its heartbeats' socket.
pub(crate) struct Listening {
    fabric: Fabric,
    beats: UdpSocket,
}

/// A TCP listener, or a libfabric endpoint.
enum Fabric {
    /// Listening for TCP connections.
    Tcp(Listener),
    /// A libfabric endpoint (`GRAPPE_FABRIC=ofi`).
    #[cfg(feature = "libfabric")]
    Ofi(ofi::Opened),
}

/// Checks the fabric setting of a job on one host, which needs none: a
/// setting that cannot work fails there as it would across hosts.
pub(crate) fn check_setting() -> Result<()> {
    FabricChoice::read(Vars::process())?;
    ConnectWhen::read(Vars::process())?;
    Ok(())
}

impl Listening {
    /// Listens (or opens the endpoint) and publishes the address (and, on
    /// process 0, the secret). Every process reads the same settings, so a
    /// setting that cannot work fails every one here, before any waits.
    pub fn start(pmi: &mut dyn Pmi, me: usize) -> Result<Listening> {
        let vars = Vars::process();
        let choice = FabricChoice::read(vars)?;
        #[cfg_attr(not(feature = "libfabric"), allow(unused_variables))]
        let when = ConnectWhen::read(vars)?;
        let ip = local_address(vars)?;
        let fabric = match choice {
            FabricChoice::Tcp => {
                let listener = Listener::bind(SocketAddr::new(ip, 0))
                    .map_err(|source| StartError::Network { what: format!("listening on {ip}"), source })?;
                pmi.put(&format!("grappe-tcp-{me}"), &listener.local_addr().to_string())?;
                Fabric::Tcp(listener)
            }
            #[cfg(feature = "libfabric")]
            FabricChoice::Ofi { provider } => {
                if let Some(var) = NetFaults::read(vars)?.setting_name() {
                    return Err(SettingError::new(
                        var,
                        vars.text(var)?.unwrap_or_default(),
                        "nothing with GRAPPE_FABRIC=ofi: faults are emulated in grappe's TCP links only",
                    )
                    .into());
                }
                if when == ConnectWhen::Lazy {
                    return Err(SettingError::new(
                        "GRAPPE_TCP_CONNECT",
                        "lazy",
                        "eager with GRAPPE_FABRIC=ofi: libfabric's links are made at start-up",
                    )
                    .into());
                }
                Fabric::Ofi(ofi::open(pmi, me, provider, ip, loss_timeout(vars)?)?)
            }
        };
        let beats = UdpSocket::bind(SocketAddr::new(ip, 0))
            .and_then(|socket| socket.local_addr().map(|addr| (socket, addr)))
            .map_err(|e| StartError::NetworkSetUp(format!("cannot bind the heartbeats' socket on {ip}: {e}")))?;
        pmi.put(&format!("grappe-beat-{me}"), &beats.1.to_string())?;
        if me == 0 {
            pmi.put("grappe-secret", &Secret::generate().to_hex())?;
        }
        Ok(Listening { fabric, beats: beats.0 })
    }

    /// Links every rank of `mine` to every rank of the other hosts.
    pub fn connect_all(self, pmi: &mut dyn Pmi, placement: &Placement, mine: Range<usize>) -> Result<Links> {
        let me = placement.process_of(mine.start);
        let mut links = match self.fabric {
            Fabric::Tcp(listener) => connect_all_tcp(listener, pmi, placement, mine)?,
            #[cfg(feature = "libfabric")]
            Fabric::Ofi(opened) => {
                let secret = job_secret(pmi)?;
                let (endpoint, links) = opened.connect_all(pmi, &secret, placement, mine.clone())?;
                Links::over_ofi(mine, placement, endpoint, links)?
            }
        };
        links.heartbeats = Mutex::new(start_heartbeats(pmi, placement, me, self.beats)?);
        Ok(links)
    }
}

/// Starts the heartbeats of this process if it is its host's first (see
/// [`heartbeat`]): it beats to the next host's first process and watches
/// the previous host's. A silent host ends this process at once, naming
/// the host and its ranks: its processes may be alive, cut off, and the
/// process manager would never hear of a failure.
fn start_heartbeats(
    pmi: &mut dyn Pmi,
    placement: &Placement,
    me: usize,
    socket: UdpSocket,
) -> Result<Option<Heartbeats>> {
    let hosts = placement.hosts();
    let here = placement.process_host[me];
    let first_of =
        |host: usize| placement.process_host.iter().position(|&h| h == host).expect("every host has a process");
    // Hosts emulated on one machine share its loopback, which no cut
    // reaches: they do not beat.
    let emulated: usize = Vars::process().number("GRAPPE_EMULATED_HOSTS", 1, "a number of hosts (at least 1)")?;
    if hosts < 2 || first_of(here) != me || emulated > 1 {
        return Ok(None);
    }
    let silence = silence_limit(Vars::process())?;
    let secret = job_secret(pmi)?;
    let (next, watched) = ((here + 1) % hosts, (here + hosts - 1) % hosts);
    let next_process = first_of(next);
    let value = pmi.get(&format!("grappe-beat-{next_process}"))?;
    let next_addr = value.parse().map_err(|_| StartError::NetworkAddress { process: next_process, value })?;
    let ring = Ring { next: next_addr, watched: watched as u32, me: here as u32 };
    let (label, here_label) = (placement.host_label(watched), placement.host_label(here));
    let ranks: Vec<usize> = (0..placement.rank_host.len()).filter(|&r| placement.rank_host[r] == watched).collect();
    let on_silence = Box::new(move |silence: Silence| {
        let (ranks, seconds) = (rank_list(&ranks), silence.silent.as_secs_f64());
        crate::say(&match silence.cut_off_here {
            Some(error) => format!(
                "host {here_label} is cut off from the other hosts: its heartbeats cannot be sent ({error}), \
                 and nothing was heard from host {label} ({ranks}) for {seconds:.1} s"
            ),
            None => format!(
                "{ranks} on host {label} {} lost: nothing heard from that host for {seconds:.1} s \
                 (its link down, or the machine gone)",
                if ranks.starts_with("ranks") { "are" } else { "is" },
            ),
        });
        std::process::exit(1);
    });
    Heartbeats::start(socket, ring, &secret, silence, on_silence)
        .map(Some)
        .map_err(|e| StartError::NetworkSetUp(format!("cannot start the heartbeats between hosts: {e}")))
}

/// `rank 3`, `ranks 2-5`, or `ranks 1, 4, 7`.
fn rank_list(ranks: &[usize]) -> String {
    match ranks {
        [one] => format!("rank {one}"),
        [first, .., last] if last - first + 1 == ranks.len() => format!("ranks {first}-{last}"),
        _ => format!("ranks {}", ranks.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    }
}

/// `GRAPPE_NET_SILENCE_MS`: how long the host watched by heartbeats may
/// stay silent before it counts as lost (a second by default, at least
/// three heartbeat periods).
fn silence_limit(vars: Vars<'_>) -> Result<Duration> {
    let least = 3 * heartbeat::PERIOD.as_millis() as u64;
    let expected = "milliseconds (at least 300)";
    let millis: u64 = vars.number("GRAPPE_NET_SILENCE_MS", 1000, expected)?;
    match millis >= least {
        true => Ok(Duration::from_millis(millis)),
        false => Err(SettingError::new("GRAPPE_NET_SILENCE_MS", millis.to_string(), expected).into()),
    }
}

/// This process's `GRAPPE_TCP_CONNECT` (`eager` or `lazy`), which every
/// process publishes with its entry at start-up: a process that connects
/// at start-up would wait for connections that processes connecting on
/// demand never make, so processes that differ stop the start.
pub(crate) fn connect_setting() -> Result<&'static str> {
    Ok(ConnectWhen::read(Vars::process())?.name())
}

/// The job's secret, which process 0 published.
fn job_secret(pmi: &mut dyn Pmi) -> Result<Secret> {
    Secret::from_hex(&pmi.get("grappe-secret")?)
        .map_err(|e| StartError::NetworkSetUp(format!("process 0 published a job secret that is not one: {e}")))
}

/// Connects every rank of `mine` to every rank of the other hosts over
/// TCP (the lower rank of each pair connects, the higher one accepts).
fn connect_all_tcp(listener: Listener, pmi: &mut dyn Pmi, placement: &Placement, mine: Range<usize>) -> Result<Links> {
    let loss = loss_timeout(Vars::process())?;
    let faults = NetFaults::read(Vars::process())?;
    faults.check(placement)?;
    let secret = Arc::new(job_secret(pmi)?);
    let here = placement.rank_host[mine.start];
    let remote: Vec<usize> = (0..placement.rank_host.len()).filter(|&q| placement.rank_host[q] != here).collect();
    if ConnectWhen::read(Vars::process())? == ConnectWhen::Lazy {
        if faults.drop.is_some() {
            let value = Vars::process().text("GRAPPE_NET_DROP_AFTER_MS")?.unwrap_or_default();
            let expected = "nothing with GRAPPE_TCP_CONNECT=lazy: it cuts the links made at start-up";
            return Err(SettingError::new("GRAPPE_NET_DROP_AFTER_MS", value, expected).into());
        }
        let setup = LinkSetup { loss, shaping: faults.shaping };
        return Links::on_demand(listener, pmi, placement, mine, &remote, secret, setup);
    }
    let expected = mine.clone().map(|r| remote.iter().filter(|&&q| q < r).count()).sum();
    let accepting = {
        let secret = secret.clone();
        std::thread::Builder::new()
            .name("grappe-accept".into())
            .spawn(move || accept_all(&listener, &secret, expected))
            .map_err(|e| StartError::NetworkSetUp(format!("cannot start the thread that accepts connections: {e}")))?
    };
    let mut addresses = HashMap::new();
    let mut links = HashMap::new();
    for r in mine.clone() {
        for &q in remote.iter().filter(|&&q| q > r) {
            let process = placement.process_of(q);
            let addr = match addresses.get(&process) {
                Some(&addr) => addr,
                None => {
                    let addr = published_address(pmi, process)?;
                    addresses.insert(process, addr);
                    addr
                }
            };
            let link = connect_with_retries(addr, Hello { from: r as u32, to: q as u32 }, &secret)
                .map_err(|e| network_error(&format!("rank {r} connecting to rank {q} at {addr}"), e))?;
            links.insert((r, q), link);
        }
    }
    let accepted = accepting
        .join()
        .map_err(|_| StartError::NetworkSetUp("the thread that accepts connections panicked".into()))?;
    for (hello, link) in accepted.map_err(|e| network_error("accepting the connections of other hosts", e))? {
        let (from, to) = (hello.from as usize, hello.to as usize);
        let known = mine.contains(&to) && remote.contains(&from) && from < to;
        if !known || links.contains_key(&(to, from)) {
            return Err(StartError::NetworkSetUp(format!(
                "{} connected as rank {from} asking for rank {to}, which this process does not expect",
                link.peer_addr()
            )));
        }
        links.insert((to, from), link);
    }
    let mut cutters = Vec::new();
    for (&(r, q), link) in &mut links {
        let failed = |e| network_error(&format!("rank {r} with rank {q}"), e);
        link.detect_loss_after(loss).map_err(failed)?;
        if let Some(shaping) = faults.shaping {
            link.shape(shaping).map_err(failed)?;
        }
        if faults.cuts(r, q) {
            cutters.push((r, q, link.cutter()));
        }
    }
    if let Some(drop) = faults.drop {
        cutters.sort_by_key(|&(r, q, _)| (r, q));
        faults::cut_after(drop.after, cutters)?;
    }
    Links::new(mine, placement, links)
}

/// Accepts `expected` authenticated connections, within [`SET_UP`]. A
/// connection that fails to authenticate (a stranger, or a process of
/// another job) is refused and said, and does not count.
fn accept_all(listener: &Listener, secret: &Secret, expected: usize) -> Result<Vec<(Hello, Link)>, LinkError> {
    listener.set_accept_timeout(SET_UP)?;
    let mut accepted = Vec::with_capacity(expected);
    while accepted.len() < expected {
        match listener.accept(secret, HANDSHAKE) {
            Ok(link) => accepted.push(link),
            Err(refused) if refused.is_from_peer() => {
                crate::say(&format!("warning: refused a connection: {refused}"));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(accepted)
}

/// Connects, trying again while the peer's process is not listening yet.
fn connect_with_retries(addr: SocketAddr, hello: Hello, secret: &Secret) -> Result<Link, LinkError> {
    let deadline = Instant::now() + SET_UP;
    loop {
        match grappe_fabric_tcp::connect(addr, hello, secret, HANDSHAKE) {
            Err(e) if e.is_refused() && Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            outcome => return outcome,
        }
    }
}

/// The address process `process` published.
fn published_address(pmi: &mut dyn Pmi, process: usize) -> Result<SocketAddr> {
    let value = pmi.get(&format!("grappe-tcp-{process}"))?;
    value.parse().map_err(|_| StartError::NetworkAddress { process, value })
}

fn network_error(what: &str, source: LinkError) -> StartError {
    StartError::Network { what: what.to_owned(), source }
}

/// `GRAPPE_NET_TIMEOUT_MS`: how long a host may stay silent (its link
/// down, the machine gone) before its ranks count as lost. A minute by
/// default, which a network losing a fifth of its packets does not reach
/// (see `Link::detect_loss_after`); a host whose processes die is lost at
/// once whatever it is (their connections close).
fn loss_timeout(vars: Vars<'_>) -> Result<Duration> {
    let millis: u64 = vars.number("GRAPPE_NET_TIMEOUT_MS", 60_000, "milliseconds (at least 2000)")?;
    match millis {
        2000.. => Ok(Duration::from_millis(millis)),
        _ => Err(SettingError::new("GRAPPE_NET_TIMEOUT_MS", millis.to_string(), "milliseconds (at least 2000)").into()),
    }
}

/// The address this process listens on (see the module's documentation).
fn local_address(vars: Vars<'_>) -> Result<IpAddr> {
    if let Some(text) = vars.text("GRAPPE_NET_ADDR")? {
        return text.trim().parse().map_err(|_| SettingError::new("GRAPPE_NET_ADDR", &text, "an IP address").into());
    }
    let emulated: usize = vars.number("GRAPPE_EMULATED_HOSTS", 1, "a number of hosts (at least 1)")?;
    if emulated > 1 {
        return Ok(IpAddr::V4(Ipv4Addr::LOCALHOST));
    }
    Ok(first_interface_address().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)))
}

/// The first IPv4 address of an interface that is up and is not the
/// loopback.
fn first_interface_address() -> Option<IpAddr> {
    use nix::net::if_::InterfaceFlags;
    nix::ifaddrs::getifaddrs().ok()?.find_map(|ifa| {
        let usable = ifa.flags.contains(InterfaceFlags::IFF_UP) && !ifa.flags.contains(InterfaceFlags::IFF_LOOPBACK);
        let ip = ifa.address?.as_sockaddr_in()?.ip();
        usable.then_some(IpAddr::V4(ip))
    })
}

/// The links of a process's ranks, until each rank takes its own, and the
/// watcher that wakes the ranks' workers when a link has news.
pub(crate) struct Links {
    /// The connections made on demand, until the watcher starts them.
    on_demand: Mutex<Option<OnDemand>>,
    /// Index: rank - `first`; each entry by world rank.
    per_rank: Mutex<Vec<Option<Vec<Option<RemoteLink>>>>>,
    first: usize,
    /// What to watch of each link.
    sockets: Vec<Watched>,
    /// The libfabric endpoint the links share, if they are libfabric's.
    #[cfg(feature = "libfabric")]
    endpoint: Option<grappe_fabric_ofi::Endpoint>,
    /// This process's heartbeats, if it is its host's first.
    heartbeats: Mutex<Option<Heartbeats>>,
}

/// A TCP link to world rank `q`, of another host.
fn tcp_link(placement: &Placement, q: usize, out: LinkOut, inbox: LinkIn) -> RemoteLink {
    RemoteLink {
        out: Outbox::Tcp(Box::new(out)),
        inbox: Inbox::Tcp(Box::new(inbox)),
        host: placement.host_label(placement.rank_host[q]),
        host_index: placement.rank_host[q],
    }
}

/// Descriptors and their watcher's token, by the address of a doorbell.
type ByBell = HashMap<usize, Vec<(RawFd, u64)>>;

/// Watches links for the workers of the ranks that own them: what
/// [`Links::wake_on_arrival`] sets up, shared with the threads that make
/// connections on demand.
struct Watcher {
    watch: Arc<Watch>,
    /// The descriptors to re-arm when a worker goes to sleep, by the
    /// address of its doorbell.
    by_bell: Arc<Mutex<ByBell>>,
    /// The doorbell of each rank of this process (its index).
    bell_of: HashMap<usize, usize>,
    host: Arc<grappe_fabric::HostMemory>,
}

impl Watcher {
    /// Watches one link: its receiving socket armed when the owner's
    /// worker goes to sleep, its sending socket for room all the time.
    fn add(&self, watched: &Watched) -> Result<(), LinkError> {
        let &Watched { receiving, sending, timer, rank } = watched;
        let token = self.bell_of[&rank] as u64;
        self.watch.add_interest(receiving, token, Interest::ReadableOnce)?;
        self.watch.add_interest(sending, token, Interest::Writable)?;
        let bell = self.host.doorbell(token as usize) as *const Doorbell as usize;
        let mut by_bell = self.by_bell.lock().unwrap_or_else(PoisonError::into_inner);
        by_bell.entry(bell).or_default().push((receiving, token));
        if let Some(timer) = timer {
            self.watch.add_interest(timer, token, Interest::ReadableOnce)?;
            by_bell.entry(bell).or_default().push((timer, token));
        }
        Ok(())
    }

    /// Wakes the worker of world rank `rank`.
    fn wake(&self, rank: usize) {
        self.host.doorbell(self.bell_of[&rank]).ring();
    }
}

/// The descriptors of one link to watch, and the rank that owns it.
struct Watched {
    receiving: RawFd,
    sending: RawFd,
    /// The release timer of a shaped link.
    timer: Option<RawFd>,
    /// World rank of the owner.
    rank: usize,
}

impl Watched {
    /// What to watch of a connected link of `rank`; `None` for halves
    /// whose connection is not made.
    fn of(rank: usize, out: &LinkOut, inbox: &LinkIn) -> Option<Watched> {
        Some(Watched { receiving: inbox.raw_fd()?, sending: out.raw_fd()?, timer: out.release_timer_fd(), rank })
    }
}

impl Links {
    /// No links: a job on one host.
    pub fn none() -> Links {
        Links {
            on_demand: Mutex::new(None),
            per_rank: Mutex::new(Vec::new()),
            first: 0,
            sockets: Vec::new(),
            #[cfg(feature = "libfabric")]
            endpoint: None,
            heartbeats: Mutex::new(None),
        }
    }

    /// Stops this process's heartbeats, saying goodbye to the next host:
    /// the process ends normally.
    pub fn finish_heartbeats(&self) {
        if let Some(mut beats) = self.heartbeats.lock().unwrap_or_else(PoisonError::into_inner).take() {
            beats.finish();
        }
    }

    /// The libfabric links of the ranks of `mine`, over `endpoint`.
    #[cfg(feature = "libfabric")]
    fn over_ofi(
        mine: Range<usize>,
        placement: &Placement,
        endpoint: grappe_fabric_ofi::Endpoint,
        mut links: ofi::ByPair,
    ) -> Result<Links> {
        let world = placement.rank_host.len();
        let per_rank = mine
            .clone()
            .map(|r| {
                let row = (0..world).map(|q| {
                    let link = links.remove(&(r, q))?;
                    let host = placement.rank_host[q];
                    Some(ofi::remote_link(link, placement.host_label(host), host))
                });
                Some(row.collect())
            })
            .collect();
        Ok(Links {
            on_demand: Mutex::new(None),
            per_rank: Mutex::new(per_rank),
            first: mine.start,
            sockets: Vec::new(),
            endpoint: Some(endpoint),
            heartbeats: Mutex::new(None),
        })
    }

    fn new(mine: Range<usize>, placement: &Placement, mut links: HashMap<(usize, usize), Link>) -> Result<Links> {
        let world = placement.rank_host.len();
        let mut sockets = Vec::new();
        let mut per_rank = Vec::with_capacity(mine.len());
        for r in mine.clone() {
            let mut row = Vec::with_capacity(world);
            for q in 0..world {
                let Some(link) = links.remove(&(r, q)) else {
                    row.push(None);
                    continue;
                };
                let (out, inbox) = link.split().map_err(|e| network_error(&format!("rank {r} with rank {q}"), e))?;
                sockets.extend(Watched::of(r, &out, &inbox));
                row.push(Some(tcp_link(placement, q, out, inbox)));
            }
            per_rank.push(Some(row));
        }
        Ok(Links {
            on_demand: Mutex::new(None),
            per_rank: Mutex::new(per_rank),
            first: mine.start,
            sockets,
            #[cfg(feature = "libfabric")]
            endpoint: None,
            heartbeats: Mutex::new(None),
        })
    }

    /// Links of the ranks of `mine` to the ranks of `remote` made on
    /// demand (see [`on_demand`]): each process publishes its address
    /// before the fence, so every address is read now.
    fn on_demand(
        listener: Listener,
        pmi: &mut dyn Pmi,
        placement: &Placement,
        mine: Range<usize>,
        remote: &[usize],
        secret: Arc<Secret>,
        setup: LinkSetup,
    ) -> Result<Links> {
        let mut by_process = HashMap::new();
        let mut addresses = HashMap::new();
        for &q in remote {
            let process = placement.process_of(q);
            let addr = match by_process.get(&process) {
                Some(&addr) => addr,
                None => *by_process.entry(process).or_insert(published_address(pmi, process)?),
            };
            addresses.insert(q, addr);
        }
        let world = placement.rank_host.len();
        let mut per_rank: Vec<Vec<Option<RemoteLink>>> =
            mine.clone().map(|_| (0..world).map(|_| None).collect()).collect();
        let pairs = mine.clone().flat_map(|r| remote.iter().map(move |&q| (r, q)));
        let on_demand = OnDemand::new(listener, secret, addresses, pairs, setup, |(r, q), out, inbox| {
            per_rank[r - mine.start][q] = Some(tcp_link(placement, q, out, inbox));
        });
        Ok(Links {
            on_demand: Mutex::new(Some(on_demand)),
            per_rank: Mutex::new(per_rank.into_iter().map(Some).collect()),
            first: mine.start,
            sockets: Vec::new(),
            #[cfg(feature = "libfabric")]
            endpoint: None,
            heartbeats: Mutex::new(None),
        })
    }

    /// The links of world rank `rank`, by world rank (none for a rank of
    /// this host); taken once.
    pub fn take(&self, rank: usize, world: usize) -> Vec<Option<RemoteLink>> {
        let mut per_rank = self.per_rank.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = per_rank.get_mut(rank.wrapping_sub(self.first)).and_then(Option::take);
        taken.unwrap_or_else(|| (0..world).map(|_| None).collect())
    }

    /// Starts the watcher: a socket with news rings the doorbell of the
    /// worker of the rank that owns it, which may sleep waiting for it.
    ///
    /// A rank polls its sockets itself while it runs; the watcher is armed
    /// for a receiving socket only when the rank's worker goes to sleep
    /// (the doorbell's prepare hook), so that it wakes nobody for the
    /// messages a running rank reads: on a machine whose cores the ranks
    /// fill, a wake-up per message would take a core from them. A sending
    /// socket that filled up is watched for room all the time (its events
    /// come only after a write found it full). The release timer of a
    /// shaped link is armed with the receiving sockets: it is readable
    /// while a held frame is due, so a rank that goes to sleep with one
    /// wakes at once to send it, and one with frames held wakes when the
    /// first is due.
    ///
    /// A libfabric endpoint has one descriptor for all its links (and the
    /// ranks of the process that share it): it is armed, once the
    /// endpoint says nothing is left to read (`fi_trywait`), when a worker
    /// owning links goes to sleep, and its readiness rings every such
    /// worker. A worker whose endpoint still has news (or has no
    /// descriptor to sleep on) is rung at once, so it polls on. A rank's
    /// progress reads the completions of every link of the endpoint:
    /// the owners of links it brought records, credits or an end for are
    /// rung (the endpoint's arrival hook).
    pub fn wake_on_arrival(&self, job: &Job) -> Result<()> {
        if !self.networked() {
            return Ok(());
        }
        let bell_of: HashMap<usize, usize> =
            job.worker_plan().iter().flat_map(|p| p.ranks.iter().map(|&r| (r, job.local(p.ranks[0])))).collect();
        // Workers owning links of the endpoint, by their doorbell's index.
        let endpoint_bells: Vec<usize> = match self.has_endpoint() {
            true => {
                let mut bells: Vec<usize> = bell_of.values().copied().collect();
                bells.sort_unstable();
                bells.dedup();
                bells
            }
            false => Vec::new(),
        };
        let host = job.host.clone();
        let ringing = endpoint_bells.clone();
        let watch = Watch::start(Box::new(move |token| match token {
            ENDPOINT_TOKEN => ringing.iter().for_each(|&bell| host.doorbell(bell).ring()),
            bell => host.doorbell(bell as usize).ring(),
        }))
        .map_err(|e| network_error("starting the watcher of the network links", e))?;
        let watch = Arc::new(watch);
        let watcher =
            Watcher { watch: watch.clone(), by_bell: Arc::default(), bell_of: bell_of.clone(), host: job.host.clone() };
        for watched in &self.sockets {
            watcher
                .add(watched)
                .map_err(|e| network_error(&format!("watching the links of rank {}", watched.rank), e))?;
        }
        let by_bell = watcher.by_bell.clone();
        self.start_on_demand(watcher)?;
        let endpoint = self.endpoint_waker(job, &watch, &bell_of, &endpoint_bells)?;
        let armed = doorbell::set_prepare_hook(Box::new(move |bell| {
            let key = bell as *const Doorbell as usize;
            let by_bell = by_bell.lock().unwrap_or_else(PoisonError::into_inner);
            for &(fd, token) in by_bell.get(&key).into_iter().flatten() {
                // A socket already closed (its rank ended) is out of the
                // set: nothing to arm.
                let _ = watch.rearm(fd, token);
            }
            if let Some(waker) = &endpoint {
                waker.prepare(bell, key, &watch);
            }
        }));
        match armed {
            true => Ok(()),
            false => Err(StartError::NetworkSetUp("the doorbells' prepare hook was set already".into())),
        }
    }

    /// Starts making the connections made on demand, if they are: each
    /// one made is watched by `watcher`, then its rank's worker woken.
    fn start_on_demand(&self, watcher: Watcher) -> Result<()> {
        let Some(on_demand) = self.on_demand.lock().unwrap_or_else(PoisonError::into_inner).take() else {
            return Ok(());
        };
        let watcher = Arc::new(watcher);
        let waker = watcher.clone();
        let hooks = Hooks {
            watch: Box::new(move |rank, out, inbox| match Watched::of(rank, out, inbox) {
                Some(watched) => watcher.add(&watched),
                None => Ok(()),
            }),
            wake: Box::new(move |rank| waker.wake(rank)),
        };
        on_demand
            .start(hooks)
            .map_err(|e| StartError::NetworkSetUp(format!("cannot start the threads that make connections: {e}")))
    }

    /// True if the process has links to other hosts.
    fn networked(&self) -> bool {
        !self.sockets.is_empty()
            || self.has_endpoint()
            || self.on_demand.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    #[cfg(feature = "libfabric")]
    fn has_endpoint(&self) -> bool {
        self.endpoint.is_some()
    }

    #[cfg(not(feature = "libfabric"))]
    fn has_endpoint(&self) -> bool {
        false
    }

    /// What wakes the owners of the endpoint's links (see
    /// [`Links::wake_on_arrival`]).
    #[cfg(feature = "libfabric")]
    fn endpoint_waker(
        &self,
        job: &Job,
        watch: &Watch,
        bell_of: &HashMap<usize, usize>,
        bells: &[usize],
    ) -> Result<Option<EndpointWaker>> {
        let Some(endpoint) = &self.endpoint else { return Ok(None) };
        let host = job.host.clone();
        let owners = bell_of.clone();
        endpoint.on_arrival(Box::new(move |ends| {
            if let Some(&bell) = owners.get(&(ends.local as usize)) {
                host.doorbell(bell).ring();
            }
        }));
        if let Some(fd) = endpoint.raw_fd() {
            watch
                .add_interest(fd, ENDPOINT_TOKEN, Interest::ReadableOnce)
                .map_err(|e| network_error("watching the libfabric endpoint", e))?;
        }
        let owners = bells.iter().map(|&bell| job.host.doorbell(bell) as *const Doorbell as usize).collect();
        Ok(Some(EndpointWaker { endpoint: endpoint.clone(), owners }))
    }

    #[cfg(not(feature = "libfabric"))]
    fn endpoint_waker(
        &self,
        _job: &Job,
        _watch: &Watch,
        _bell_of: &HashMap<usize, usize>,
        _bells: &[usize],
    ) -> Result<Option<EndpointWaker>> {
        Ok(None)
    }
}

/// The watcher's token for the libfabric endpoint's descriptor (a
/// doorbell's index is any other).
const ENDPOINT_TOKEN: u64 = u64::MAX - 1;

/// Wakes the workers owning libfabric links.
struct EndpointWaker {
    #[cfg(feature = "libfabric")]
    endpoint: grappe_fabric_ofi::Endpoint,
    /// The doorbells of the workers owning links (their addresses).
    #[cfg(feature = "libfabric")]
    owners: Vec<usize>,
}

impl EndpointWaker {
    /// At `bell`'s prepare: if it owns links, arms the descriptor when the
    /// endpoint lets its owners sleep, or rings `bell` (its worker polls
    /// once more instead of sleeping).
    #[cfg(feature = "libfabric")]
    fn prepare(&self, bell: &Doorbell, key: usize, watch: &Watch) {
        if !self.owners.contains(&key) {
            return;
        }
        let sleep = match (self.endpoint.try_wait(), self.endpoint.raw_fd()) {
            (Ok(true), Some(fd)) => watch.rearm(fd, ENDPOINT_TOKEN).is_ok(),
            _ => false,
        };
        if !sleep {
            bell.ring();
        }
    }

    #[cfg(not(feature = "libfabric"))]
    fn prepare(&self, _bell: &Doorbell, _key: usize, _watch: &Watch) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_is_the_setting_then_loopback_for_emulated_hosts() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).into())
        };
        let set = vars(&[("GRAPPE_NET_ADDR", "10.77.0.3")]);
        assert_eq!(local_address(Vars::from_lookup(&set)).unwrap(), "10.77.0.3".parse::<IpAddr>().unwrap());
        let emulated = vars(&[("GRAPPE_EMULATED_HOSTS", "2")]);
        assert_eq!(local_address(Vars::from_lookup(&emulated)).unwrap(), IpAddr::V4(Ipv4Addr::LOCALHOST));
        let bad = vars(&[("GRAPPE_NET_ADDR", "host-a")]);
        let error = local_address(Vars::from_lookup(&bad)).unwrap_err();
        assert_eq!(error.to_string(), "GRAPPE_NET_ADDR=\"host-a\": expected an IP address");
    }
}
