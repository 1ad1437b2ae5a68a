//! Thread ranks on real engines, for the protocol tests.
#![allow(dead_code)] // each test file uses its own part

use std::sync::Arc;

use grappe_fabric::{HostMemory, LayoutParams};
use grappe_proto::{Engine, Error, ProtoSettings, RecvTarget, Started, Status, announce};
use grappe_sched::WaitSettings;

/// Runs `body` on `n` thread ranks sharing one host segment.
pub fn run<R: Send>(n: usize, settings: ProtoSettings, body: impl Fn(&mut Engine) -> R + Sync) -> Vec<R> {
    run_waiting(n, settings, WaitSettings { spin_iters: 200, ..WaitSettings::default() }, body)
}

pub fn run_waiting<R: Send>(
    n: usize,
    settings: ProtoSettings,
    wait: WaitSettings,
    body: impl Fn(&mut Engine) -> R + Sync,
) -> Vec<R> {
    let params = LayoutParams { local_ranks: n, ring_bytes: 64 << 10, rdv_slots: 8, arena_bytes: 4096, arenas: 1 };
    let host = Arc::new(HostMemory::anonymous(params).unwrap());
    for r in 0..n {
        announce(&host, r, r, r);
    }
    let locals: Vec<usize> = (0..n).collect();
    // As in the runtime: everyone connects, then a barrier, then user code;
    // a rank that panics is marked failed so its peers stop waiting.
    let connected = std::sync::Barrier::new(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|r| {
                let (host, locals, body, connected) = (host.clone(), &locals, &body, &connected);
                s.spawn(move || {
                    let mut engine = Engine::connect(host, r, locals, settings, wait).unwrap();
                    connected.wait();
                    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut engine)));
                    let out = out.unwrap_or_else(|panic| {
                        engine.mark_failed();
                        std::panic::resume_unwind(panic)
                    });
                    engine.finalize().unwrap();
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

pub fn modes() -> [ProtoSettings; 2] {
    let single = ProtoSettings::for_ring(64 << 10);
    [single, ProtoSettings { single_copy: false, ..single }]
}

pub fn send(e: &mut Engine, data: &[u8], dest: usize, tag: i32) {
    let me = e.world_rank() as u32;
    // SAFETY: `data` is borrowed until the send completes below.
    match unsafe { e.isend(data.as_ptr(), data.len(), dest, 0, tag, me) }.unwrap() {
        Started::Done(_) => {}
        Started::Pending(id) => {
            e.wait(id).unwrap();
        }
    }
}

pub fn recv(e: &mut Engine, buf: &mut [u8], src: Option<usize>, tag: Option<i32>) -> Result<Status, Error> {
    let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
    // SAFETY: `buf` is borrowed until the receive completes below.
    match unsafe { e.irecv(target, src, 0, tag) }? {
        Started::Done(done) => Ok(done.status),
        Started::Pending(id) => e.wait(id).map(|done| done.status),
    }
}

pub fn pattern(seed: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(7) ^ seed) as u8).collect()
}
