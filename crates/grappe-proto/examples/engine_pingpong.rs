//! 8-byte ping-pong on bare engines (no communicator layer), to separate
//! protocol costs from API costs.

use std::sync::Arc;
use std::time::Instant;

use grappe_fabric::{HostMemory, LayoutParams};
use grappe_proto::{Engine, ProtoSettings, RecvTarget, Started, announce};
use grappe_sched::WaitSettings;

fn main() {
    let params = LayoutParams { local_ranks: 2, ring_bytes: 64 << 10, rdv_slots: 8, arena_bytes: 4096, arenas: 1 };
    let host = Arc::new(HostMemory::anonymous(params).unwrap());
    announce(&host, 0, 0, 0);
    announce(&host, 1, 1, 1);
    let locals = [0, 1];
    let iters = 1_000_000;
    std::thread::scope(|s| {
        for me in 0..2 {
            let host = host.clone();
            s.spawn(move || {
                grappe_sched::bind_current_thread(me).ok();
                let mut e =
                    Engine::connect(host, me, &locals, ProtoSettings::for_ring(64 << 10), WaitSettings::default())
                        .unwrap();
                let peer = 1 - me;
                let mut buf = [0u8; 8];
                let start = Instant::now();
                for i in 0..iters {
                    if me == 0 {
                        send(&mut e, &(i as u64).to_le_bytes(), peer);
                        recv(&mut e, &mut buf, peer);
                    } else {
                        recv(&mut e, &mut buf, peer);
                        send(&mut e, &buf, peer);
                    }
                }
                if me == 0 {
                    println!(
                        "engine ping-pong half round trip: {:.1} ns",
                        start.elapsed().as_nanos() as f64 / iters as f64 / 2.0
                    );
                }
            });
        }
    });
}

fn send(e: &mut Engine, data: &[u8], dest: usize) {
    // SAFETY: `data` outlives the send, waited for below if pending.
    match unsafe { e.isend(data.as_ptr(), data.len(), dest, 0, 0, 0) }.unwrap() {
        Started::Done(_) => {}
        Started::Pending(id) => {
            e.wait(id).unwrap();
        }
    }
}

fn recv(e: &mut Engine, buf: &mut [u8], src: usize) {
    let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
    // SAFETY: `buf` outlives the blocking receive.
    unsafe { e.recv(target, Some(src), 0, Some(0)) }.unwrap();
}
