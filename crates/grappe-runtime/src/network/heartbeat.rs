//! Heartbeats between hosts: a host whose link goes down, or whose
//! machine vanishes, is found lost within about a second, while a network
//! that only loses packets is not.
//!
//! A host cut off closes no connection: its peers' TCP connections only
//! fail when retransmissions or keepalive probes give up, and that limit
//! cannot be short without breaking connections that a lossy network
//! merely slows down (retransmissions back off exponentially from 200 ms:
//! with a fifth of the packets lost, one segment in a few hundred waits
//! more than 2 s). Heartbeats on a channel of their own do not back off:
//! every [`PERIOD`] the first process of each host sends one datagram to
//! the first process of the next host (hosts in a ring, so each process
//! sends and watches one host whatever the job's size), and a host heard
//! from once and then silent for [`silence`](Heartbeats::start) is lost. At
//! 100 ms a beat, a second of silence is ten datagrams lost in a row: one
//! chance in ten million with a fifth of the packets lost.
//!
//! The datagrams go over UDP: every process binds a socket at start-up and
//! publishes its address (`grappe-beat-P`), whatever the fabric. A
//! datagram carries a token of the job's secret and the sender's host:
//! datagrams of other jobs are ignored. A process that ends normally says goodbye (a few times, in case
//! some are lost) so that the next host stops watching it.
//!
//! A watcher that was not running itself (the machine paused, the thread
//! starved) does not blame the silence it did not see on its peer: a gap
//! of more than a few periods in its own loop restarts the count.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use grappe_fabric_tcp::Secret;

/// How often a host's first process beats.
pub(crate) const PERIOD: Duration = Duration::from_millis(100);
/// A gap in the watcher's own loop longer than this means it did not run.
const OWN_GAP: Duration = Duration::from_millis(500);
/// How many goodbyes a process that ends sends.
const GOODBYES: usize = 5;

const BEAT: u8 = 1;
const GOODBYE: u8 = 2;
const DATAGRAM_BYTES: usize = 16 + 4 + 1;

/// The heartbeats of this process, if it is its host's first one.
pub(crate) struct Heartbeats {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// What a process beats to and watches.
pub(crate) struct Ring {
    /// The address of the next host's first process.
    pub next: SocketAddr,
    /// The host before this one in the ring: its number.
    pub watched: u32,
    /// This host's number.
    pub me: u32,
}

/// What the watcher does when the host it watches falls silent.
pub(crate) type OnSilence = Box<dyn FnOnce(Silence) + Send>;

/// A silence called out.
#[derive(Debug)]
pub(crate) struct Silence {
    /// How long nothing was heard.
    pub silent: Duration,
    /// Why this process's own last beat could not be sent, if it could
    /// not: then this host is the one cut off (its link down), not the
    /// watched one.
    pub cut_off_here: Option<std::io::Error>,
}

impl Heartbeats {
    /// Starts beating from `socket` to `ring.next`, and watching
    /// `ring.watched`; calls `on_silence` if it stays silent for `silence`
    /// once heard from.
    pub fn start(
        socket: UdpSocket,
        ring: Ring,
        secret: &Secret,
        silence: Duration,
        on_silence: OnSilence,
    ) -> std::io::Result<Heartbeats> {
        socket.set_read_timeout(Some(PERIOD / 4))?;
        let token = token_of(secret);
        let stop = Arc::new(AtomicBool::new(false));
        let beating = Beating { socket, ring, token, silence, stop: stop.clone() };
        let thread =
            std::thread::Builder::new().name("grappe-heartbeat".into()).spawn(move || beating.run(on_silence))?;
        Ok(Heartbeats { stop, thread: Some(thread) })
    }

    /// Says goodbye to the next host and stops.
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Heartbeats {
    fn drop(&mut self) {
        self.finish();
    }
}

struct Beating {
    socket: UdpSocket,
    ring: Ring,
    token: [u8; 16],
    silence: Duration,
    stop: Arc<AtomicBool>,
}

impl Beating {
    fn run(self, on_silence: OnSilence) {
        let mut watch = Watch::new(Instant::now());
        let mut next_beat = Instant::now();
        let mut send_failure = None;
        while !self.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= next_beat {
                send_failure = self.send(BEAT).err();
                next_beat = now + PERIOD;
            }
            let heard = self.receive();
            let now = Instant::now();
            match heard {
                Some(GOODBYE) => watch.goodbye(),
                Some(_) => watch.heard(now),
                None => {}
            }
            if let Some(silent) = watch.tick(now, self.silence) {
                on_silence(Silence { silent, cut_off_here: send_failure });
                return;
            }
        }
        for _ in 0..GOODBYES {
            let _ = self.send(GOODBYE);
        }
    }

    /// Sends a datagram to the next host. It fails when this host's own
    /// link is down (no route left to the next host).
    fn send(&self, kind: u8) -> std::io::Result<()> {
        self.socket.send_to(&datagram(&self.token, self.ring.me, kind), self.ring.next).map(drop)
    }

    /// The kind of a datagram from the watched host, waiting at most the
    /// socket's read timeout; `None` for nothing, or anything else.
    fn receive(&self) -> Option<u8> {
        let mut buf = [0u8; 64];
        let (len, _) = self.socket.recv_from(&mut buf).ok()?;
        let (host, kind) = parse(&buf[..len], &self.token)?;
        (host == self.ring.watched).then_some(kind)
    }
}

/// The job's token in its heartbeats: part of a proof of its secret
/// ([`Secret::prove`]), which tells the job's datagrams from other jobs'
/// without giving the secret away (not from a listener who could replay
/// it: heartbeats carry no data).
fn token_of(secret: &Secret) -> [u8; 16] {
    let proof = secret.prove(b"grappe heartbeat", &[]);
    std::array::from_fn(|i| proof[i])
}

fn datagram(token: &[u8; 16], host: u32, kind: u8) -> [u8; DATAGRAM_BYTES] {
    let mut out = [0u8; DATAGRAM_BYTES];
    out[..16].copy_from_slice(token);
    out[16..20].copy_from_slice(&host.to_le_bytes());
    out[20] = kind;
    out
}

/// The sender's host and the kind of a datagram of this job.
fn parse(bytes: &[u8], token: &[u8; 16]) -> Option<(u32, u8)> {
    if bytes.len() != DATAGRAM_BYTES || bytes[..16] != token[..] {
        return None;
    }
    let host = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    Some((host, bytes[20]))
}

/// The watcher's state: when the watched host was last heard from, by the
/// watcher's own running time.
#[derive(Debug)]
struct Watch {
    /// When the watched host was last heard from; `None` before its first
    /// beat, or after its goodbye.
    last: Option<Instant>,
    /// Whether it said goodbye.
    gone: bool,
    /// The watcher's previous turn.
    turn: Instant,
}

impl Watch {
    fn new(now: Instant) -> Watch {
        Watch { last: None, gone: false, turn: now }
    }

    fn heard(&mut self, now: Instant) {
        if !self.gone {
            self.last = Some(now);
        }
    }

    fn goodbye(&mut self) {
        self.gone = true;
        self.last = None;
    }

    /// The silence, once it is longer than `limit`. A turn that comes
    /// [`OWN_GAP`] after the previous one means the watcher did not run:
    /// the count starts again.
    fn tick(&mut self, now: Instant, limit: Duration) -> Option<Duration> {
        if now.saturating_duration_since(self.turn) > OWN_GAP {
            self.last = self.last.map(|_| now);
        }
        self.turn = now;
        let silent = now.saturating_duration_since(self.last?);
        (silent > limit).then_some(silent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(1);

    #[test]
    fn a_host_is_lost_only_once_heard_and_then_silent_past_the_limit() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut watch = Watch::new(t0);
        for ms in (100..3000).step_by(100) {
            assert_eq!(watch.tick(at(ms), LIMIT), None, "never heard from: not watched yet");
        }
        watch.heard(at(3000));
        for ms in (3100..=4000).step_by(100) {
            assert_eq!(watch.tick(at(ms), LIMIT), None, "{ms} ms: within the limit");
        }
        assert_eq!(watch.tick(at(4100), LIMIT), Some(Duration::from_millis(1100)));
    }

    #[test]
    fn a_goodbye_stops_the_watch() {
        let t0 = Instant::now();
        let mut watch = Watch::new(t0);
        watch.heard(t0);
        watch.goodbye();
        watch.heard(t0 + Duration::from_millis(50));
        for ms in (100..5000).step_by(100) {
            assert_eq!(watch.tick(t0 + Duration::from_millis(ms), LIMIT), None);
        }
    }

    #[test]
    fn a_watcher_that_did_not_run_does_not_blame_its_peer() {
        let t0 = Instant::now();
        let mut watch = Watch::new(t0);
        watch.heard(t0);
        // The watcher's next turn comes 3 s later (the machine paused).
        for ms in (3000..=4000).step_by(100) {
            assert_eq!(watch.tick(t0 + Duration::from_millis(ms), LIMIT), None, "{ms} ms");
        }
        let late = watch.tick(t0 + Duration::from_millis(4100), LIMIT);
        assert_eq!(late, Some(Duration::from_millis(1100)), "silent since the watcher ran again");
    }

    #[test]
    fn datagrams_of_another_job_or_malformed_are_ignored() {
        let (mine, theirs) = (Secret::generate(), Secret::generate());
        let token = token_of(&mine);
        assert_eq!(parse(&datagram(&token, 3, BEAT), &token), Some((3, BEAT)));
        let other = token_of(&theirs);
        assert_eq!(parse(&datagram(&other, 3, BEAT), &token), None);
        assert_eq!(parse(&datagram(&token, 3, BEAT)[..20], &token), None);
    }

    /// Real sockets on the loopback: a peer beating by hand keeps the
    /// watch quiet; when it stops without a goodbye (as a cut link looks
    /// from here), the watcher calls the silence out; a peer that says
    /// goodbye is not called out.
    #[test]
    fn silence_on_a_real_socket_is_called_out_and_a_goodbye_is_not() {
        let secret = Secret::generate();
        let token = token_of(&secret);
        // Long beside the period: a test thread late by a second still beats in time.
        let silence = Duration::from_millis(1500);
        for says_goodbye in [false, true] {
            let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
            let watching_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
            let watcher = watching_socket.local_addr().unwrap();
            let (said, heard) = std::sync::mpsc::channel();
            let ring = Ring { next: peer.local_addr().unwrap(), watched: 7, me: 1 };
            let on_silence = Box::new(move |silence: Silence| said.send(silence.silent).unwrap());
            let _watching = Heartbeats::start(watching_socket, ring, &secret, silence, on_silence).unwrap();
            for _ in 0..10 {
                peer.send_to(&datagram(&token, 7, BEAT), watcher).unwrap();
                std::thread::sleep(PERIOD);
            }
            assert!(heard.try_recv().is_err(), "no silence while the peer beats");
            if says_goodbye {
                peer.send_to(&datagram(&token, 7, GOODBYE), watcher).unwrap();
                assert!(heard.recv_timeout(silence * 2).is_err(), "a peer that said goodbye is not lost");
            } else {
                let silent = heard.recv_timeout(Duration::from_secs(10)).expect("the watcher calls the silence out");
                assert!(silent > silence);
            }
        }
    }
}
