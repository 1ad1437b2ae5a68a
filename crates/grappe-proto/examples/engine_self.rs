//! One rank sends 8 bytes to itself and receives them, N times: the
//! instruction count of the send and receive paths without any waiting
//! (for callgrind).

use std::sync::Arc;

use grappe_fabric::{HostMemory, LayoutParams};
use grappe_proto::{Engine, ProtoSettings, RecvTarget, Started, announce};
use grappe_sched::WaitSettings;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let params = LayoutParams { local_ranks: 1, ring_bytes: 64 << 10, rdv_slots: 8, arena_bytes: 4096, arenas: 1 };
    let host = Arc::new(HostMemory::anonymous(params).unwrap());
    announce(&host, 0, 0, 0);
    let mut e = Engine::connect(host, 0, &[0], ProtoSettings::for_ring(64 << 10), WaitSettings::default()).unwrap();
    let mut buf = [0u8; 8];
    for i in 0..n as u64 {
        let data = i.to_le_bytes();
        // SAFETY: eager sends complete on the spot; `data` outlives them.
        let Started::Done(_) = unsafe { e.isend(data.as_ptr(), 8, 0, 0, 0, 0) }.unwrap() else { panic!("eager") };
        let target = RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: 8 };
        // SAFETY: `buf` outlives the blocking receive.
        unsafe { e.recv(target, Some(0), 0, Some(0)) }.unwrap();
        assert_eq!(buf, data);
    }
}
