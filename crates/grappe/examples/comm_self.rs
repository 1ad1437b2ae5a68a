//! One rank sends 8 bytes to itself through the communicator API, N times
//! (instruction counts of the API path, for callgrind). With
//! `COMM_SELF_PROCESS=1` the rank is a process started by `grappe::run`
//! (alone, a singleton), as a C program's rank is: the counterpart of
//! `bench/mpi_self.c`.

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let body = move |world: &grappe::Communicator| {
        let mut buf = [0u8; 8];
        for i in 0..n as u64 {
            world.send(&i.to_le_bytes(), 0, 0).unwrap();
            world.recv(&mut buf, 0, 0).unwrap();
        }
    };
    match std::env::var_os("COMM_SELF_PROCESS") {
        Some(_) => grappe::run(|world| -> grappe::Result<()> {
            body(world);
            Ok(())
        }),
        None => {
            grappe::testing::threads(1, body);
        }
    }
}
