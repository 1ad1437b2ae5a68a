//! Point-to-point semantics, checked on whatever world runs them (two
//! ranks or more). Every check returns `Err(description)` on failure.

use grappe::{ANY_SOURCE, ANY_TAG, Communicator, Error};

type Check = fn(&Communicator) -> Result<(), String>;

const CHECKS: &[(&str, Check)] = &[
    ("ordering under a storm", ordering_storm),
    ("wildcards", wildcards),
    ("sizes from 0 bytes to 64 MiB", sizes),
    ("truncation", truncation),
    ("non-blocking completion", nonblocking),
    ("probe", probe),
    ("communicator isolation", communicators),
    ("vectors and serde values", vectors_and_values),
    ("misuse errors", misuse),
];

/// Runs every check; the world must have at least two ranks.
pub fn run_all(world: &Communicator) -> Result<(), String> {
    if world.size() < 2 {
        return Err(format!("the suite needs 2 ranks or more, got {}", world.size()));
    }
    let timed = std::env::var_os("P2P_SUITE_TIMES").is_some();
    for (name, check) in CHECKS {
        let start = std::time::Instant::now();
        check(world).map_err(|e| format!("check `{name}` failed on rank {}: {e}", world.rank()))?;
        world.barrier().map_err(|e| e.to_string())?;
        if timed && world.rank() == 0 {
            eprintln!("{name}: {:.3} s", start.elapsed().as_secs_f64());
        }
    }
    Ok(())
}

fn fail(e: Error) -> String {
    e.to_string()
}

fn expect(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond { Ok(()) } else { Err(what()) }
}

/// Bytes derived from (seed, index), so receivers know what to expect.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u64).wrapping_mul(2654435761).wrapping_add(seed).to_le_bytes()[3]).collect()
}

/// Every rank sends 1500 messages of mixed sizes (eager and rendezvous) on
/// 4 tags to its right neighbour; the neighbour receives tag by tag in
/// reverse order. Per (source, tag), sending order must hold.
fn ordering_storm(world: &Communicator) -> Result<(), String> {
    let (n, me) = (world.size(), world.rank());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let count = 1500usize;
    let size_of = |seq: usize| if seq % 50 == 7 { 20_000 } else { 8 + seq % 120 };
    let outgoing: Vec<Vec<u8>> = (0..count)
        .map(|seq| {
            let mut m = pattern(seq as u64, size_of(seq));
            m[..8].copy_from_slice(&(seq as u64).to_le_bytes());
            m
        })
        .collect();
    world.scope(|s| -> Result<(), String> {
        for (seq, m) in outgoing.iter().enumerate() {
            let request = world.isend(s, &m[..], right, (seq % 4) as i32).map_err(fail)?;
            drop(request); // the scope completes it
        }
        let mut buf = vec![0u8; 20_000];
        for tag in (0..4).rev() {
            let mut last = None;
            for _ in 0..count / 4 {
                let status = world.recv(&mut buf[..], left, tag).map_err(fail)?;
                let seq = u64::from_le_bytes(buf[..8].try_into().unwrap()) as usize;
                expect(seq % 4 == tag as usize && status.bytes == size_of(seq), || {
                    format!("message {seq} on tag {tag}: {status:?}")
                })?;
                expect(last.is_none_or(|l| seq > l), || format!("tag {tag}: message {seq} overtook {last:?}"))?;
                expect(buf[8..status.bytes] == pattern(seq as u64, status.bytes)[8..], || {
                    format!("message {seq} corrupted")
                })?;
                last = Some(seq);
            }
        }
        Ok(())
    })
}

/// Every other rank sends 60 numbered messages to rank 0 on varying tags;
/// rank 0 receives them all with ANY_SOURCE and ANY_TAG.
fn wildcards(world: &Communicator) -> Result<(), String> {
    let per_source = 60u64;
    if world.rank() != 0 {
        for seq in 0..per_source {
            world.send(&[world.rank() as u64, seq], 0, (seq % 5) as i32).map_err(fail)?;
        }
        return Ok(());
    }
    let mut next = vec![0u64; world.size()];
    for _ in 0..per_source * (world.size() as u64 - 1) {
        let mut msg = [0u64; 2];
        let status = world.recv(&mut msg, ANY_SOURCE, ANY_TAG).map_err(fail)?;
        let (src, seq) = (msg[0] as usize, msg[1]);
        expect(status.source == src && status.tag == (seq % 5) as i32 && status.bytes == 16, || {
            format!("{status:?} for {msg:?}")
        })?;
        expect(seq == next[src], || format!("from {src}: got {seq}, expected {}", next[src]))?;
        next[src] += 1;
    }
    Ok(())
}

/// Ranks 0 and 1 bounce messages from 0 bytes to 64 MiB, content checked.
fn sizes(world: &Communicator) -> Result<(), String> {
    let sizes = [0usize, 1, 7, 64, 4095, 8192, 8193, 65536, (1 << 20) + 3, 64 << 20];
    if world.rank() > 1 {
        return Ok(());
    }
    for (i, &len) in sizes.iter().enumerate() {
        let tag = i as i32;
        let mut buf = vec![0u8; len];
        if world.rank() == 0 {
            world.send(&pattern(i as u64, len)[..], 1, tag).map_err(fail)?;
            let status = world.recv(&mut buf[..], 1, tag).map_err(fail)?;
            expect(status.bytes == len && buf == pattern(i as u64 + 99, len), || format!("echo of {len} bytes"))?;
        } else {
            let status = world.recv(&mut buf[..], 0, tag).map_err(fail)?;
            expect(status.bytes == len && buf == pattern(i as u64, len), || format!("{len} bytes arrived corrupted"))?;
            world.send(&pattern(i as u64 + 99, len)[..], 0, tag).map_err(fail)?;
        }
    }
    Ok(())
}

/// Longer messages than the buffer fail with both sizes; the channel
/// keeps working afterwards.
fn truncation(world: &Communicator) -> Result<(), String> {
    for (round, len) in [100usize, 100_000].into_iter().enumerate() {
        let tag = 10 + round as i32;
        match world.rank() {
            0 => {
                world.send(&pattern(1, len)[..], 1, tag).map_err(fail)?;
                world.send(b"after", 1, tag).map_err(fail)?;
            }
            1 => {
                let mut small = [0u8; 10];
                match world.recv(&mut small, 0, tag) {
                    Err(Error::Truncated { source_rank: 0, message_bytes, buffer_bytes: 10, .. })
                        if message_bytes == len => {}
                    other => return Err(format!("{len} bytes into 10: {other:?}")),
                }
                let mut buf = [0u8; 5];
                world.recv(&mut buf, 0, tag).map_err(fail)?;
                expect(&buf == b"after", || "message after the truncated one".into())?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// An all-to-all exchange with isend/irecv, completed with wait_any,
/// test_all and wait.
fn nonblocking(world: &Communicator) -> Result<(), String> {
    let (n, me) = (world.size(), world.rank());
    let outgoing: Vec<[u64; 4]> = (0..n).map(|to| [me as u64, to as u64, 7, 9]).collect();
    let mut incoming = vec![[0u64; 4]; n];
    world.scope(|s| -> Result<(), String> {
        let mut recvs = Vec::new();
        for (from, slot) in incoming.iter_mut().enumerate() {
            if from != me {
                recvs.push(world.irecv(s, slot, from, 33).map_err(fail)?);
            }
        }
        let mut sends = Vec::new();
        for (to, msg) in outgoing.iter().enumerate() {
            if to != me {
                sends.push(world.isend(s, msg, to, 33).map_err(fail)?);
            }
        }
        let mut seen = 0;
        while !recvs.is_empty() {
            let (_, status) = grappe::wait_any(&mut recvs).map_err(fail)?;
            expect(status.bytes == 32 && status.tag == 33, || format!("{status:?}"))?;
            seen += 1;
        }
        expect(seen == n - 1, || format!("{seen} receives completed"))?;
        while !grappe::test_all(&mut sends).map_err(fail)? {}
        Ok(())
    })?;
    for (from, msg) in incoming.iter().enumerate() {
        expect(from == me || *msg == [from as u64, me as u64, 7, 9], || format!("from {from}: {msg:?}"))?;
    }
    Ok(())
}

/// Probe gives the size before the receive.
fn probe(world: &Communicator) -> Result<(), String> {
    match world.rank() {
        1 => world.send(&pattern(5, 3000)[..], 0, 44).map_err(fail),
        0 => {
            let status = world.probe(ANY_SOURCE, 44).map_err(fail)?;
            expect(status.source == 1 && status.bytes == 3000, || format!("{status:?}"))?;
            expect(world.iprobe(1, 45).map_err(fail)?.is_none(), || "iprobe saw a message that was never sent".into())?;
            let mut buf = vec![0u8; status.bytes];
            world.recv(&mut buf[..], status.source, status.tag).map_err(fail)?;
            expect(buf == pattern(5, 3000), || "probed message corrupted".into())
        }
        _ => Ok(()),
    }
}

/// A duplicate's traffic never matches the original's, even with
/// wildcards; split groups renumber ranks.
fn communicators(world: &Communicator) -> Result<(), String> {
    let dup = world.dup().map_err(fail)?;
    match world.rank() {
        0 => {
            dup.send(&1u32, 1, 0).map_err(fail)?;
            world.send(&2u32, 1, 0).map_err(fail)?;
        }
        1 => {
            let mut v = 0u32;
            world.recv(&mut v, ANY_SOURCE, ANY_TAG).map_err(fail)?;
            expect(v == 2, || format!("world receive got the duplicate's message {v}"))?;
            dup.recv(&mut v, 0, 0).map_err(fail)?;
            expect(v == 1, || format!("duplicate got {v}"))?;
        }
        _ => {}
    }
    let color = (world.rank() % 2) as u32;
    let half = world.split(Some(color), -(world.rank() as i32)).map_err(fail)?.ok_or("no communicator")?;
    let expected_size = (world.size() + 1 - color as usize) / 2;
    expect(half.size() == expected_size, || format!("split size {} != {expected_size}", half.size()))?;
    expect(half.rank() == half.size() - 1 - world.rank() / 2, || format!("key order: rank {} in split", half.rank()))?;
    let mut got = 0usize;
    let (right, left) = ((half.rank() + 1) % half.size(), (half.rank() + half.size() - 1) % half.size());
    half.sendrecv(&world.rank(), right, 3, &mut got, left, 3).map_err(fail)?;
    expect(half.world_rank_of(left).map_err(fail)? == got, || format!("sendrecv in split got {got}"))?;
    let none = world.split(None, 0).map_err(fail)?;
    expect(none.is_none(), || "MPI_UNDEFINED gave a communicator".into())
}

#[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
struct Particle {
    name: String,
    position: [f64; 3],
    neighbours: Vec<u32>,
}

/// `send_vec`/`recv_vec` and serialised values.
fn vectors_and_values(world: &Communicator) -> Result<(), String> {
    match world.rank() {
        0 => {
            world.send_vec((0..100_000u64).collect(), 1, 50).map_err(fail)?;
            let p = Particle { name: "proton".into(), position: [1.0, -2.5, 3.25], neighbours: vec![4, 8, 15] };
            world.send_obj(&p, 1, 51).map_err(fail)
        }
        1 => {
            let (v, status) = world.recv_vec::<u64>(0, 50).map_err(fail)?;
            expect(status.bytes == 800_000 && v.iter().enumerate().all(|(i, &x)| x == i as u64), || {
                "vector corrupted".into()
            })?;
            let (p, _) = world.recv_obj::<Particle>(0, 51).map_err(fail)?;
            expect(p.name == "proton" && p.neighbours == [4, 8, 15] && p.position[1] == -2.5, || format!("{p:?}"))
        }
        _ => Ok(()),
    }
}

/// Misuse gives typed errors with the numbers, never a panic or a hang.
fn misuse(world: &Communicator) -> Result<(), String> {
    let n = world.size();
    match world.send(&1u8, n + 3, 0) {
        Err(Error::InvalidRank { rank, size }) if rank == n + 3 && size == n => {}
        other => return Err(format!("send to rank {}: {other:?}", n + 3)),
    }
    match world.send(&1u8, 0, -5) {
        Err(Error::InvalidTag { tag: -5, .. }) => {}
        other => return Err(format!("negative tag: {other:?}")),
    }
    let dup = world.dup().map_err(fail)?;
    dup.free();
    match dup.send(&1u8, 0, 0) {
        Err(Error::CommFreed) => {}
        other => return Err(format!("send on a freed communicator: {other:?}")),
    }
    match world.rank() {
        0 => world.send(&[1u8; 7], 1, 60).map_err(fail),
        1 => match world.recv(&mut [0u16; 8], 0, 60) {
            Err(Error::TypeSizeMismatch { bytes: 7, type_size: 2 }) => Ok(()),
            other => Err(format!("7 bytes into u16: {other:?}")),
        },
        _ => Ok(()),
    }
}
