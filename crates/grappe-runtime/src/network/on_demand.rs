//! TCP connections made at start-up or on demand: `GRAPPE_TCP_CONNECT`.
//!
//! * `eager` (the default): every rank connects to every rank of the other
//!   hosts at start-up. A job starts a little later, holds a connection per
//!   pair of ranks on different hosts whether they talk or not, and a first
//!   message costs no more than the next.
//! * `lazy`: a rank connects to a rank of another host when it first sends
//!   to it, and a rank that never talks to another never holds a
//!   connection to it (as Open MPI's TCP BTL does). Either side may start
//!   the connection; when both do at once, the lower rank's wins
//!   (`grappe_fabric_tcp::pairing`). Connections are authenticated with the
//!   job's secret as at start-up.
//!
//! With `lazy`, each process of a job across hosts runs two threads that
//! block on the network, never on the ranks: one accepts the connections
//! of other hosts' ranks, one makes the connections its ranks ask for.
//! A connection made is configured as at start-up (loss timeout, emulated
//! shaping), its two halves watched for readiness, handed to the rank and
//! the rank's worker woken. `GRAPPE_NET_DROP_AFTER_MS` cuts the links made
//! at start-up, so it needs `eager`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use grappe_fabric_tcp::{Hello, Link, LinkError, LinkIn, LinkOut, Listener, Pairing, Secret, Shaping, Step};
use grappe_settings::{SettingError, Vars};

use super::HANDSHAKE;

const EXPECTED: &str = "eager (every connection at start-up, the default) or lazy (each on its first message)";

/// When the connections between hosts are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnectWhen {
    /// Every one at start-up.
    Eager,
    /// Each on the first message of the pair.
    Lazy,
}

impl ConnectWhen {
    /// The setting's value for this.
    pub fn name(self) -> &'static str {
        match self {
            ConnectWhen::Eager => "eager",
            ConnectWhen::Lazy => "lazy",
        }
    }

    /// Reads `GRAPPE_TCP_CONNECT`.
    pub fn read(vars: Vars<'_>) -> Result<ConnectWhen, SettingError> {
        match vars.text("GRAPPE_TCP_CONNECT")? {
            None => Ok(ConnectWhen::Eager),
            Some(text) => match text.trim() {
                "eager" => Ok(ConnectWhen::Eager),
                "lazy" => Ok(ConnectWhen::Lazy),
                _ => Err(SettingError::new("GRAPPE_TCP_CONNECT", text, EXPECTED)),
            },
        }
    }
}

/// How a connection is configured once made, as at start-up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LinkSetup {
    /// See `Link::detect_loss_after`.
    pub loss: Duration,
    /// Emulated shaping, if asked for.
    pub shaping: Option<Shaping>,
}

impl LinkSetup {
    /// `link` configured and cut in its halves.
    pub fn apply(self, mut link: Link) -> Result<(LinkOut, LinkIn), LinkError> {
        link.detect_loss_after(self.loss)?;
        if let Some(shaping) = self.shaping {
            link.shape(shaping)?;
        }
        link.split()
    }
}

/// Watches the halves of a connection made for a rank of this process.
pub(crate) type WatchFn = Box<dyn Fn(usize, &LinkOut, &LinkIn) -> Result<(), LinkError> + Send + Sync>;

/// What a connection made is handed to: watches its halves for the rank
/// `rank` that owns them, then the rank is woken ([`Hooks::wake`]).
pub(crate) struct Hooks {
    /// Watches the halves of a connection of `rank`.
    pub watch: WatchFn,
    /// Wakes the worker of `rank`.
    pub wake: Box<dyn Fn(usize) + Send + Sync>,
}

/// The connections of this process's ranks to be made on demand, until
/// [`OnDemand::start`] starts the threads that make them.
pub(crate) struct OnDemand {
    listener: Listener,
    secret: Arc<Secret>,
    /// Listening address of every rank of another host.
    addresses: HashMap<usize, SocketAddr>,
    /// By (rank of this process, rank of another host).
    pairings: HashMap<(usize, usize), Arc<Pairing>>,
    requests: Receiver<Step>,
    setup: LinkSetup,
}

impl OnDemand {
    /// Pairings for every rank of `mine` with every rank of `remote`, whose
    /// processes listen at `addresses`; `halves` gets the pending halves
    /// of each pair.
    pub fn new(
        listener: Listener,
        secret: Arc<Secret>,
        addresses: HashMap<usize, SocketAddr>,
        pairs: impl Iterator<Item = (usize, usize)>,
        setup: LinkSetup,
        mut halves: impl FnMut((usize, usize), LinkOut, LinkIn),
    ) -> OnDemand {
        let (ask, requests) = channel();
        let mut pairings = HashMap::new();
        for (r, q) in pairs {
            let ask = ask.clone();
            let pairing = Arc::new(Pairing::new(
                r as u32,
                q as u32,
                Box::new(move |step| {
                    // The connecting thread ends with the process only.
                    let _ = ask.send(step);
                }),
            ));
            halves((r, q), LinkOut::pending(pairing.clone()), LinkIn::pending(pairing.clone()));
            pairings.insert((r, q), pairing);
        }
        OnDemand { listener, secret, addresses, pairings, requests, setup }
    }

    /// Starts the accepting and the connecting threads. They run as long
    /// as the process: a rank may connect until it finalizes.
    pub fn start(self, hooks: Hooks) -> std::io::Result<()> {
        let OnDemand { listener, secret, addresses, pairings, requests, setup } = self;
        let local = listener.local_addr();
        let maker = Arc::new(Maker { pairings, setup, hooks, local, failed: Mutex::new(None) });
        let accepting = maker.clone();
        let accepting_secret = secret.clone();
        std::thread::Builder::new()
            .name("grappe-accept".into())
            .spawn(move || accepting.accept_for_ever(&listener, &accepting_secret))?;
        std::thread::Builder::new()
            .name("grappe-connect".into())
            .spawn(move || maker.connect_on_request(&requests, &addresses, &secret))?;
        Ok(())
    }
}

/// Makes the connections, from either thread.
struct Maker {
    pairings: HashMap<(usize, usize), Arc<Pairing>>,
    setup: LinkSetup,
    hooks: Hooks,
    /// The listening address, to name in errors.
    local: SocketAddr,
    /// Why accepting stopped, if it did: pairs left without a connection
    /// fail with it.
    failed: Mutex<Option<String>>,
}

impl Maker {
    /// Accepts connections until accepting itself fails.
    fn accept_for_ever(&self, listener: &Listener, secret: &Secret) {
        loop {
            let mut chosen = None;
            let outcome = listener.accept_deciding(secret, HANDSHAKE, |hello| {
                let Some(pairing) = self.pairings.get(&(hello.to as usize, hello.from as usize)) else {
                    return false;
                };
                let keep = pairing.on_hello();
                if keep {
                    chosen = Some(pairing.clone());
                }
                keep
            });
            match (outcome, chosen) {
                (Ok((_, Some(link))), Some(pairing)) => self.make(&pairing, link),
                (Ok((hello, None)), None) if !self.pairings.contains_key(&(hello.to as usize, hello.from as usize)) => {
                    crate::say(&format!(
                        "warning: declined a connection from {hello}, a pair this process does not hold"
                    ));
                }
                (Ok(_), _) => {}
                (Err(error), Some(pairing)) => self.fail(&pairing, error),
                (Err(refused), None) if refused.is_from_peer() => {
                    crate::say(&format!("warning: refused a connection: {refused}"));
                }
                (Err(error), None) => {
                    self.stop_accepting(error);
                    return;
                }
            }
        }
    }

    /// Connects the pairs its ranks ask for, one after the other.
    fn connect_on_request(&self, requests: &Receiver<Step>, addresses: &HashMap<usize, SocketAddr>, secret: &Secret) {
        for step in requests {
            let (r, q) = (step.me as usize, step.peer as usize);
            let pairing = &self.pairings[&(r, q)];
            let addr = addresses[&q];
            match grappe_fabric_tcp::connect_offering(addr, Hello { from: step.me, to: step.peer }, secret, HANDSHAKE) {
                Ok(Some(link)) if pairing.on_verdict(true) => self.make(pairing, link),
                Ok(Some(_)) => {}
                Ok(None) => {
                    pairing.on_verdict(false);
                    self.check_accepting(pairing);
                }
                Err(error) => self.fail(pairing, error),
            }
        }
    }

    /// Configures `link`, watches it and hands it to its rank.
    fn make(&self, pairing: &Pairing, link: Link) {
        let rank = pairing.step().me as usize;
        let made = self.setup.apply(link).and_then(|(out, inbound)| {
            (self.hooks.watch)(rank, &out, &inbound)?;
            Ok((out, inbound))
        });
        match made {
            Ok((out, inbound)) => pairing.deposit(out, inbound),
            Err(error) => pairing.fail(error),
        }
        (self.hooks.wake)(rank);
    }

    fn fail(&self, pairing: &Pairing, error: LinkError) {
        pairing.fail(error);
        (self.hooks.wake)(pairing.step().me as usize);
    }

    /// Accepting failed (not a peer: the listener itself): every pair
    /// without a connection fails, since none can come any more.
    fn stop_accepting(&self, error: LinkError) {
        crate::say(&format!("warning: this process accepts no more connections from other hosts: {error}"));
        *self.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(error.to_string());
        for pairing in self.pairings.values() {
            self.check_accepting(pairing);
        }
    }

    /// Fails `pairing` if it waits for a connection that accepting, now
    /// stopped, will never take.
    fn check_accepting(&self, pairing: &Pairing) {
        let failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(cause) = failed
            && pairing.state() != grappe_fabric_tcp::PairState::Ready
        {
            let source = std::io::Error::other(cause);
            self.fail(pairing, LinkError::Io { op: "accept connections on", addr: self.local, source });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::Sender;
    use std::time::Instant;

    use super::*;

    const LIMIT: Duration = Duration::from_secs(20);

    /// One process of rank `me` whose pair with rank `peer` connects on
    /// demand: its halves, and the wake-ups of its rank.
    struct Side {
        out: LinkOut,
        inbox: LinkIn,
        woken: Receiver<usize>,
    }

    /// Two processes of ranks 0 and 1, on loopback; `secret` is the job's.
    fn two_sides(secret: &Secret) -> (Side, Side, SocketAddr) {
        let listeners = [0, 1].map(|_| Listener::bind("127.0.0.1:0".parse().unwrap()).unwrap());
        let addrs = [listeners[0].local_addr(), listeners[1].local_addr()];
        let [a, b] = listeners;
        let side = |listener: Listener, me: usize, peer: usize| {
            let mut halves = None;
            let setup = LinkSetup { loss: Duration::from_secs(60), shaping: None };
            let addresses = HashMap::from([(peer, addrs[peer])]);
            let pairs = std::iter::once((me, peer));
            let on_demand = OnDemand::new(listener, Arc::new(secret.clone()), addresses, pairs, setup, |_, o, i| {
                halves = Some((o, i));
            });
            let (wakes, woken): (Sender<usize>, _) = channel();
            let wakes = Mutex::new(wakes);
            let hooks = Hooks {
                watch: Box::new(|_, _, _| Ok(())),
                wake: Box::new(move |rank| _ = wakes.lock().unwrap().send(rank)),
            };
            on_demand.start(hooks).unwrap();
            let (out, inbox) = halves.unwrap();
            Side { out, inbox, woken }
        };
        (side(a, 0, 1), side(b, 1, 0), addrs[0])
    }

    /// Pushes `word` until the connection is made, waiting for wake-ups.
    fn push(side: &mut Side, word: u32) {
        let deadline = Instant::now() + LIMIT;
        while !side.out.try_push([word; 4], &word.to_le_bytes()) {
            let left = deadline.checked_duration_since(Instant::now()).expect("no connection within the limit");
            let _ = side.woken.recv_timeout(left);
        }
    }

    /// The next record's first word, waiting for it.
    fn receive(side: &mut Side) -> u32 {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(record) = side.inbox.peek().unwrap() {
                let word = record.meta()[0];
                record.consume();
                return word;
            }
            assert!(Instant::now() < deadline, "no record within the limit");
            std::thread::yield_now();
        }
    }

    #[test]
    fn both_sides_sending_at_once_share_one_connection_and_strangers_are_refused() {
        let secret = Secret::generate();
        let (mut zero, mut one, zero_addr) = two_sides(&secret);
        // A stranger, passing for rank 1, is refused; the pair stays idle.
        let hello = Hello { from: 1, to: 0 };
        let refused = grappe_fabric_tcp::connect_offering(zero_addr, hello, &Secret::generate(), LIMIT).unwrap_err();
        assert!(matches!(refused, LinkError::Auth { .. }), "{refused:?}");
        assert!(!zero.out.is_connected() && !one.out.is_connected());
        // Both ask at once: a push is refused until the connection is made
        // (as on a full link), unless it was made already.
        let early = [zero.out.try_push([7; 4], b""), one.out.try_push([8; 4], b"")];
        push(&mut zero, 10);
        push(&mut one, 11);
        // Every record pushed arrives, in order, on the one connection
        // both sides kept.
        let expect = |early: bool, early_word: u32, word: u32| if early { vec![early_word, word] } else { vec![word] };
        let from_one: Vec<u32> = expect(early[1], 8, 11).iter().map(|_| receive(&mut zero)).collect();
        let from_zero: Vec<u32> = expect(early[0], 7, 10).iter().map(|_| receive(&mut one)).collect();
        assert_eq!((from_one, from_zero), (expect(early[1], 8, 11), expect(early[0], 7, 10)));
        assert!(zero.out.is_connected() && one.out.is_connected());
    }

    #[test]
    fn the_setting_is_eager_or_lazy_and_names_a_bad_value() {
        let vars = |value: &'static str| move |name: &str| (name == "GRAPPE_TCP_CONNECT").then(|| value.into());
        let none = |_: &str| None;
        assert_eq!(ConnectWhen::read(Vars::from_lookup(&none)).unwrap(), ConnectWhen::Eager);
        assert_eq!(ConnectWhen::read(Vars::from_lookup(&vars("lazy"))).unwrap(), ConnectWhen::Lazy);
        assert_eq!(ConnectWhen::read(Vars::from_lookup(&vars(" eager "))).unwrap(), ConnectWhen::Eager);
        let error = ConnectWhen::read(Vars::from_lookup(&vars("later"))).unwrap_err().to_string();
        assert!(error.starts_with("GRAPPE_TCP_CONNECT=\"later\": expected eager"), "{error}");
    }
}
