//! One rank sends 8 bytes to itself through the communicator API, N times
//! (instruction counts of the API path, for callgrind).

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    grappe::testing::threads(1, |world| {
        let mut buf = [0u8; 8];
        for i in 0..n as u64 {
            world.send(&i.to_le_bytes(), 0, 0).unwrap();
            world.recv(&mut buf, 0, 0).unwrap();
        }
    });
}
