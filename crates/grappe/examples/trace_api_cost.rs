//! The cost of recording events in a tight loop, as a program makes them:
//! through the user's trace API, a point event, a region (enter and
//! leave: two events), a counter sample; and runtime calls, an `iprobe`
//! that finds nothing, a send and a receive to self, and a non-blocking
//! send and receive to self with their two waits. Run traced, one
//! rank:
//!
//!     GRAPPE_TRACE=/tmp/t target/release/examples/trace_api_cost [EVENTS] [BATCHES]
//!
//! Prints the median ns per event (per call for the runtime calls). Run it
//! untraced too: a runtime call's recording cost is the difference.

use std::time::Instant;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (n, batches) = (args.first().copied().unwrap_or(100_000), args.get(1).copied().unwrap_or(11));
    grappe::run(|world| -> grappe::Result<()> {
        let median = |f: &mut dyn FnMut() -> f64| {
            let mut v: Vec<f64> = (0..batches).map(|_| f()).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let point = median(&mut || {
            let t0 = Instant::now();
            for _ in 0..n {
                world.trace_event("tick");
            }
            t0.elapsed().as_nanos() as f64 / n as f64
        });
        let region = median(&mut || {
            let t0 = Instant::now();
            for _ in 0..n {
                let _r = world.region("step");
            }
            t0.elapsed().as_nanos() as f64 / (2 * n) as f64
        });
        let counter = median(&mut || {
            let t0 = Instant::now();
            for i in 0..n {
                world.trace_counter("residual", i as i64);
            }
            t0.elapsed().as_nanos() as f64 / n as f64
        });
        let iprobe = median(&mut || {
            let t0 = Instant::now();
            for _ in 0..n {
                std::hint::black_box(world.iprobe(grappe::Source::Any, grappe::Tag::Any).unwrap());
            }
            t0.elapsed().as_nanos() as f64 / n as f64
        });
        let me = world.rank();
        let mut word = [0u64; 1];
        let selfpair = median(&mut || {
            let t0 = Instant::now();
            for i in 0..n {
                world.send(&[i as u64], me, 0).unwrap();
                world.recv(&mut word, me, 0).unwrap();
            }
            t0.elapsed().as_nanos() as f64 / (2 * n) as f64
        });
        let (mut posted, sent) = ([0u64; 1], [7u64; 1]);
        let nonblocking = median(&mut || {
            let t0 = Instant::now();
            for _ in 0..n {
                world
                    .scope(|scope| -> grappe::Result<()> {
                        let send = world.isend(scope, &sent, me, 2)?;
                        let recv = world.irecv(scope, &mut posted, me, 2)?;
                        send.wait()?;
                        recv.wait().map(drop)
                    })
                    .unwrap();
            }
            t0.elapsed().as_nanos() as f64 / (4 * n) as f64
        });
        println!(
            "trace_api_cost events={n} batches={batches} point_ns={point:.2} region_ns_per_event={region:.2} counter_ns={counter:.2} iprobe_ns={iprobe:.2} self_ns_per_call={selfpair:.2} nonblocking_ns_per_call={nonblocking:.2}"
        );
        Ok(())
    });
}
