//! Feeds arbitrary bytes to what a checkpoint server reads from a client
//! and a client from a server (grappe_ft::wire): requests, texts,
//! statuses and image streams.
//!
//! Properties: nothing panics or allocates beyond the declared bounds;
//! an image stream is accepted only if its trailer matches the bytes
//! received (size and CRC-32).
#![no_main]

use std::io::{Cursor, Read, Write};

use grappe_ft::wire::Conn;
use libfuzzer_sys::fuzz_target;

struct Input(Cursor<Vec<u8>>);

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for Input {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let conn = || Conn::new(Input(Cursor::new(data.to_vec())), "fuzz");
    // A server's session: requests until the input ends or breaks.
    let mut c = conn();
    while let Ok(Some(_)) = c.read_request() {}
    // The handshake's job name, a status.
    let _ = conn().read_text("job name");
    let _ = conn().read_status();
    // An image: accepted only with a matching trailer.
    let mut image = Vec::new();
    if let Ok(end) = conn().recv_stream(&mut image) {
        assert_eq!(end.total, image.len() as u64);
        assert_eq!(end.crc, crc32fast::hash(&image));
        assert!(image.len() <= data.len());
    }
});
