//! One-way stream: rank 0 sends many messages to rank 1, which receives
//! them in order; prints the time per message. Measures how far a sender
//! can run ahead of its receiver, i.e. the effect of the mailbox size
//! (`GRAPPE_RING_BYTES`).
//!
//!     grappe run -n 2 target/release/examples/stream [BYTES] [MESSAGES]

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bytes: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1024);
    let messages: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    grappe::run(|world| -> grappe::Result<()> {
        let mut buf = vec![7u8; bytes];
        world.barrier()?;
        let start = Instant::now();
        match world.rank() {
            0 => (0..messages).try_for_each(|_| world.send(&buf[..], 1, 0))?,
            1 => (0..messages).try_for_each(|_| world.recv(&mut buf[..], 0, 0).map(|_| ()))?,
            _ => {}
        }
        world.barrier()?;
        if world.rank() == 0 {
            let ns = start.elapsed().as_nanos() as f64 / messages as f64;
            println!(
                "stream bytes={bytes} messages={messages} ns_per_message={ns:.1} MBps={:.1}",
                bytes as f64 / ns * 1e3
            );
        }
        Ok(())
    });
}
