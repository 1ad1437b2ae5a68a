//! What one authenticated connection costs: a listener on the loopback
//! accepts (on a thread of its own, as a process's accepting thread does)
//! while this thread connects, N times; prints the median and the 90th
//! percentile of the time from `connect` to a usable link on the
//! connecting side (TCP's three-way handshake, then the four messages of
//! the secret's challenge and response).
//!
//!     cargo run --release -p grappe-fabric-tcp --example connect_cost -- 2000

use std::time::{Duration, Instant};

use grappe_fabric_tcp::{Hello, Listener, Secret, connect_offering};

const TIMEOUT: Duration = Duration::from_secs(10);

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let secret = Secret::generate();
    let listener = Listener::bind("127.0.0.1:0".parse().expect("an address")).expect("a listener");
    let addr = listener.local_addr();
    let accepting = {
        let secret = secret.clone();
        std::thread::spawn(move || {
            for _ in 0..count {
                let (_, link) = listener.accept_deciding(&secret, TIMEOUT, |_| true).expect("accepted");
                drop(link);
            }
        })
    };
    let mut took: Vec<Duration> = (0..count)
        .map(|i| {
            let start = Instant::now();
            let link = connect_offering(addr, Hello { from: i as u32, to: 0 }, &secret, TIMEOUT).expect("connected");
            let elapsed = start.elapsed();
            assert!(link.is_some(), "accepted");
            elapsed
        })
        .collect();
    accepting.join().expect("the accepting thread");
    took.sort_unstable();
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!("connections={count} median_us={:.1} p90_us={:.1}", micros(took[count / 2]), micros(took[count * 9 / 10]));
}
