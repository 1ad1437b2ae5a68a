//! What one process reads from memory another process wrote: the header of
//! a host segment, and mailbox record metadata and payloads. Arbitrary
//! bytes must give an error (or a valid value), never a panic.
#![no_main]

use grappe_fabric::HostLayout;
use grappe_proto::wire::{Envelope, Handover, Rts, Words};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut page = vec![0u8; 8192];
    let n = data.len().min(page.len());
    page[..n].copy_from_slice(&data[..n]);
    // SAFETY: `page` has the length we pass.
    if let Ok(layout) = unsafe { HostLayout::read_header(page.as_ptr(), 1 << 40) } {
        assert!(layout.total_len() >= 4096);
    }
    if data.len() >= 16 {
        let meta: [u32; 4] = std::array::from_fn(|i| u32::from_le_bytes(data[i * 4..i * 4 + 4].try_into().unwrap()));
        if let Some(env) = Envelope::decode(meta) {
            assert_eq!(Envelope::decode(env.encode()), Some(env));
        }
        let rest = &data[16..];
        if let Some(rts) = Rts::read(rest) {
            let mut out = [0u8; Rts::BYTES];
            rts.write(&mut out);
            assert_eq!(Rts::read(&out), Some(rts));
        }
        let _ = Handover::read(rest);
    }
});
