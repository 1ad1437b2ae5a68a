//! What the libfabric link costs next to the TCP link, between two
//! processes on the loopback address: the half round trip of an 8-byte
//! record (ping-pong), and the bandwidth of a stream of 1 MiB records
//! (the receiver acknowledges the last one).
//!
//! ```text
//! cargo run --release -p grappe-fabric-ofi --features libfabric --example ofi_pingpong -- \
//!     [--provider 'tcp;ofi_rxm'] [--fragment BYTES] [--depth N] [--rounds N] [--megabytes N] [--repeats N]
//! ```
//!
//! The program starts itself as the peer, and the two exchange their
//! addresses over the peer's standard streams. Both sides poll without
//! sleeping. On a machine whose cores other work also uses, the figures
//! vary from run to run by several times: the best of the repeats says
//! what the path costs.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grappe_fabric_ofi::{Config, Endpoint, Ends, Meta, name_from_text, name_to_text};

const PING: u32 = 1;
const STREAM: u32 = 2;
const ACK: u32 = 3;
const DONE: u32 = 4;

const SMALL: usize = 8;
const LARGE: usize = 1 << 20;

/// What the benchmark needs of a link.
trait Records {
    fn push(&mut self, meta: Meta, payload: &[u8]) -> bool;
    /// True when nothing waits to leave.
    fn flush(&mut self) -> bool;
    /// The next record's meta and length, consumed; none if none is whole.
    fn next(&mut self) -> Option<(Meta, usize)>;
}

impl Records for grappe_fabric_ofi::Link {
    fn push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        self.try_push(meta, payload).expect("the ofi link broke")
    }

    fn flush(&mut self) -> bool {
        self.flush().expect("the ofi link broke")
    }

    fn next(&mut self) -> Option<(Meta, usize)> {
        let got = self.peek().expect("the ofi link broke").map(|record| (record.meta(), record.len()));
        if got.is_some() {
            self.consume();
        }
        got
    }
}

impl Records for grappe_fabric_tcp::Link {
    fn push(&mut self, meta: Meta, payload: &[u8]) -> bool {
        self.try_push(meta, payload).expect("the tcp link broke")
    }

    fn flush(&mut self) -> bool {
        self.flush().expect("the tcp link broke")
    }

    fn next(&mut self) -> Option<(Meta, usize)> {
        let got = self.peek().expect("the tcp link broke").map(|record| (record.meta(), record.len()));
        if got.is_some() {
            self.consume();
        }
        got
    }
}

struct Settings {
    provider: String,
    fragment: usize,
    depth: usize,
    rounds: usize,
    megabytes: usize,
    repeats: usize,
    peer: bool,
}

fn settings() -> Settings {
    let defaults = Config::default();
    let mut settings = Settings {
        provider: "tcp;ofi_rxm".into(),
        fragment: defaults.fragment,
        depth: defaults.depth,
        rounds: 10_000,
        megabytes: 256,
        repeats: 5,
        peer: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--provider" => settings.provider = value(),
            "--fragment" => settings.fragment = value().parse().expect("--fragment BYTES"),
            "--depth" => settings.depth = value().parse().expect("--depth N"),
            "--rounds" => settings.rounds = value().parse().expect("--rounds N"),
            "--megabytes" => settings.megabytes = value().parse().expect("--megabytes N"),
            "--repeats" => settings.repeats = value().parse::<usize>().expect("--repeats N").max(1),
            "--peer" => settings.peer = true,
            other => panic!("unknown argument {other}"),
        }
    }
    settings
}

fn config(settings: &Settings) -> Config {
    Config { fragment: settings.fragment, depth: settings.depth, ..Config::new(&settings.provider, "127.0.0.1") }
}

fn main() {
    let settings = settings();
    if settings.peer {
        return peer(&settings);
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(std::env::args().skip(1))
        .arg("--peer")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the peer");
    let mut from_peer = BufReader::new(child.stdout.take().unwrap());
    let mut to_peer = child.stdin.take().unwrap();
    let mut line = String::new();

    from_peer.read_line(&mut line).unwrap();
    let peer_name = name_from_text(line.trim().strip_prefix("OFI ").expect("the peer's endpoint")).unwrap();
    let endpoint = Endpoint::open(&config(&settings)).expect("opening the endpoint");
    writeln!(to_peer, "{}", name_to_text(endpoint.name())).unwrap();
    let mut ofi = endpoint.link(&peer_name, Ends { local: 0, remote: 1 }).unwrap();
    let tagged = if endpoint.tagged() { "tagged" } else { "plain messages" };
    let (fragment, depth) = (settings.fragment, settings.depth);
    println!("ofi  {} ({tagged}, fragment {fragment} B, depth {depth}):", endpoint.provider());
    measure(&mut ofi, &settings);

    line.clear();
    from_peer.read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("TCP ").expect("the peer's address").to_owned();
    let mut tcp = grappe_fabric_tcp::Link::new(TcpStream::connect(addr).unwrap()).unwrap();
    println!("tcp  grappe-fabric-tcp:");
    measure(&mut tcp, &settings);

    assert!(child.wait().unwrap().success(), "the peer failed");
}

/// Latency and bandwidth over `link`, then tells the peer to stop. Each
/// is measured `repeats` times: on a loaded machine the best says what
/// the path costs, the median what a run meets.
fn measure(link: &mut impl Records, settings: &Settings) {
    let small = vec![0x5a; SMALL];
    for _ in 0..settings.rounds / 10 {
        round_trip(link, &small);
    }
    let mut halves: Vec<f64> = (0..settings.repeats)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..settings.rounds {
                round_trip(link, &small);
            }
            start.elapsed().as_secs_f64() * 1e6 / (2 * settings.rounds) as f64
        })
        .collect();
    let (best, median) = best_and_median(&mut halves, |a, b| a.total_cmp(b));
    println!(
        "  {SMALL} B half round trip: best {best:.2} us, median {median:.2} us ({} x {} rounds)",
        settings.repeats, settings.rounds
    );

    let large = vec![0xa5; LARGE];
    stream(link, &large, 16);
    let mut rates: Vec<f64> = (0..settings.repeats)
        .map(|_| {
            let start = Instant::now();
            stream(link, &large, settings.megabytes);
            settings.megabytes as f64 / start.elapsed().as_secs_f64()
        })
        .collect();
    let (best, median) = best_and_median(&mut rates, |a, b| b.total_cmp(a));
    println!(
        "  1 MiB records: best {best:.0} MiB/s, median {median:.0} MiB/s ({} x {} MiB)",
        settings.repeats, settings.megabytes
    );
    while !link.push([DONE, 0, 0, 0], &[]) {
        link.flush();
    }
    wait_for(link, ACK);
}

/// The best (first in `order`) and the median of `values`.
fn best_and_median(values: &mut [f64], order: impl Fn(&f64, &f64) -> std::cmp::Ordering) -> (f64, f64) {
    values.sort_by(order);
    (values[0], values[values.len() / 2])
}

fn round_trip(link: &mut impl Records, payload: &[u8]) {
    while !link.push([PING, 0, 0, 0], payload) {
        link.flush();
    }
    wait_for(link, PING);
}

/// Pushes `count` records of `payload`, then waits for the peer's ack.
fn stream(link: &mut impl Records, payload: &[u8], count: usize) {
    for i in 0..count {
        let last = u32::from(i + 1 == count);
        while !link.push([STREAM, last, 0, 0], payload) {
            link.flush();
        }
    }
    wait_for(link, ACK);
}

fn wait_for(link: &mut impl Records, kind: u32) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        link.flush();
        if let Some((meta, _)) = link.next() {
            assert_eq!(meta[0], kind, "a record of another kind");
            return;
        }
        assert!(Instant::now() < deadline, "no answer from the peer in 120 s");
    }
}

/// The peer: echoes pings, acknowledges the last record of a stream and
/// the end of a measure.
fn peer(settings: &Settings) {
    let endpoint = Endpoint::open(&config(settings)).expect("opening the peer's endpoint");
    println!("OFI {}", name_to_text(endpoint.name()));
    std::io::stdout().flush().unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let parent = name_from_text(line.trim()).unwrap();
    let mut ofi = endpoint.link(&parent, Ends { local: 1, remote: 0 }).unwrap();
    serve(&mut ofi);

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    println!("TCP {}", listener.local_addr().unwrap());
    std::io::stdout().flush().unwrap();
    let mut tcp = grappe_fabric_tcp::Link::new(listener.accept().unwrap().0).unwrap();
    serve(&mut tcp);
}

fn serve(link: &mut impl Records) {
    let small = vec![0x5a; SMALL];
    loop {
        link.flush();
        let Some(([kind, last, ..], _)) = link.next() else { continue };
        let answer = match kind {
            PING => PING,
            STREAM if last == 1 => ACK,
            STREAM => continue,
            DONE => ACK,
            other => panic!("unknown record kind {other}"),
        };
        while !link.push([answer, 0, 0, 0], &small) {
            link.flush();
        }
        if kind == DONE {
            // The last answer must leave before the link goes.
            while !link.flush() {}
            return;
        }
    }
}
