//! The protocol over network links: thread ranks split into hosts, each
//! host its own segment, every pair of ranks on different hosts joined by
//! a real TCP connection over the loopback interface (authenticated with a
//! job secret, woken by a readiness watcher as in the runtime). Messages
//! of every size and mode arrive whole, in order, with their envelopes;
//! a rank that ends after saying so closes its links cleanly; a rank lost
//! without a word makes its peers fail, naming it and its host.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use common::{pattern, recv, send};
use grappe_fabric::link::{Inbox, Outbox};
use grappe_fabric::{HostMemory, LayoutParams};
use grappe_fabric_tcp::{Cutter, Hello, Listener, Secret, Shaping, Watch, connect};
use grappe_proto::{Engine, Error, ProtoSettings, RemoteLink, Started, announce};
use grappe_sched::WaitSettings;
use proptest::prelude::*;

/// One rank's start: its host, its host-local index, its links.
struct Start {
    host: Arc<HostMemory>,
    locals: Vec<Option<usize>>,
    links: Vec<Option<RemoteLink>>,
}

/// A laid-out job: each rank's start, the watchers (kept alive for the
/// run), and a cutter of every link by (owner, peer).
struct Layout {
    starts: Vec<Start>,
    watches: Vec<Watch>,
    cutters: HashMap<(usize, usize), Cutter>,
}

/// Lays out `hosts` hosts of `per_host` ranks (world rank `r` on host
/// `r / per_host`) and connects every pair across hosts, every link
/// shaped by `shaping` if given.
fn lay_out(hosts: usize, per_host: usize, shaping: Option<Shaping>) -> Layout {
    let n = hosts * per_host;
    let host_of = |r: usize| r / per_host;
    let params =
        LayoutParams { local_ranks: per_host, ring_bytes: 64 << 10, rdv_slots: 8, arena_bytes: 4096, arenas: 1 };
    let memories: Vec<Arc<HostMemory>> = (0..hosts).map(|_| Arc::new(HostMemory::anonymous(params).unwrap())).collect();
    for r in 0..n {
        announce(&memories[host_of(r)], r, r % per_host, r % per_host);
    }
    let secret = Secret::generate();
    let mut pairs: HashMap<(usize, usize), grappe_fabric_tcp::Link> = HashMap::new();
    for a in 0..n {
        for b in (a + 1)..n {
            if host_of(a) == host_of(b) {
                continue;
            }
            let listener = Listener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
            let addr = listener.local_addr();
            let hello = Hello { from: a as u32, to: b as u32 };
            let accepting = std::thread::scope(|s| {
                let accepted = s.spawn(|| listener.accept(&secret, Duration::from_secs(10)).unwrap());
                let link = connect(addr, hello, &secret, Duration::from_secs(10)).unwrap();
                (link, accepted.join().unwrap())
            });
            let (link_a, (said, link_b)) = accepting;
            assert_eq!(said, hello);
            pairs.insert((a, b), link_a);
            pairs.insert((b, a), link_b);
        }
    }
    let watches: Vec<Watch> = memories
        .iter()
        .map(|memory| {
            let memory = memory.clone();
            Watch::start(Box::new(move |bell| memory.doorbell(bell as usize).ring())).unwrap()
        })
        .collect();
    let mut cutters = HashMap::new();
    let starts = (0..n)
        .map(|r| {
            let locals = (0..n).map(|q| (host_of(q) == host_of(r)).then_some(q % per_host)).collect();
            let links = (0..n)
                .map(|q| {
                    let mut link = pairs.remove(&(r, q))?;
                    let (watch, token) = (&watches[host_of(r)], (r % per_host) as u64);
                    watch.add(link.raw_fd(), token).unwrap();
                    if let Some(shaping) = shaping {
                        link.shape(shaping).unwrap();
                        watch.add(link.release_timer_fd().unwrap(), token).unwrap();
                    }
                    cutters.insert((r, q), link.cutter());
                    let (out, inbox) = link.split().unwrap();
                    let host = format!("host{}", host_of(q));
                    Some(RemoteLink {
                        out: Outbox::Tcp(Box::new(out)),
                        inbox: Inbox::Tcp(Box::new(inbox)),
                        host,
                        host_index: host_of(q),
                    })
                })
                .collect();
            Start { host: memories[host_of(r)].clone(), locals, links }
        })
        .collect();
    Layout { starts, watches, cutters }
}

/// Runs `body` on every rank of `hosts` × `per_host`, each on its own
/// thread; finalizes the ranks whose body returns `true`.
fn run_hosts<R: Send>(hosts: usize, per_host: usize, body: impl Fn(&mut Engine) -> (R, bool) + Sync) -> Vec<R> {
    let wait = WaitSettings { spin_iters: 200, ..WaitSettings::default() };
    run_laid_out(lay_out(hosts, per_host, None), wait, body)
}

/// Runs `body` on every rank of `layout`, as [`run_hosts`] does.
fn run_laid_out<R: Send>(layout: Layout, wait: WaitSettings, body: impl Fn(&mut Engine) -> (R, bool) + Sync) -> Vec<R> {
    let Layout { starts, watches: _watches, cutters: _cutters } = layout;
    let settings = ProtoSettings::for_ring(64 << 10);
    let connected = Barrier::new(starts.len());
    std::thread::scope(|s| {
        let handles: Vec<_> = starts
            .into_iter()
            .enumerate()
            .map(|(r, start)| {
                let (body, connected) = (&body, &connected);
                s.spawn(move || {
                    let mut engine =
                        Engine::connect_links(start.host, r, &start.locals, start.links, settings, wait).unwrap();
                    connected.wait();
                    let (out, finalize) = body(&mut engine);
                    if finalize {
                        engine.finalize().unwrap();
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Every rank sends `sizes` to every other rank (tag = the size's index),
/// then receives theirs from any source and checks bytes and envelopes.
fn all_to_all(e: &mut Engine, sizes: &[usize]) {
    let (me, n) = (e.world_rank(), e.world_size());
    let mut pending = Vec::new();
    let outgoing: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &len)| pattern(me * 31 + i, len)).collect();
    for dest in (0..n).filter(|&d| d != me) {
        for (i, data) in outgoing.iter().enumerate() {
            // SAFETY: `outgoing` outlives every send, waited for below.
            match unsafe { e.isend(data.as_ptr(), data.len(), dest, 0, i as i32, me as u32) }.unwrap() {
                Started::Done(_) => {}
                Started::Pending(id) => pending.push(id),
            }
        }
    }
    for src in (0..n).filter(|&s| s != me) {
        for (i, &len) in sizes.iter().enumerate() {
            let mut buf = vec![0u8; len];
            let status = recv(e, &mut buf, Some(src), Some(i as i32)).unwrap();
            assert_eq!((status.source, status.tag, status.bytes), (src, i as i32, len));
            assert!(buf == pattern(src * 31 + i, len), "rank {me}: message {i} of {len} bytes from {src} differs");
        }
    }
    for id in pending {
        e.wait(id).unwrap();
    }
}

#[test]
fn messages_of_every_size_cross_hosts_whole_and_in_order() {
    // Eager, fragments (several per message, past the link's fragment
    // size), and a large one; ranks of one host use their rings meanwhile.
    let sizes = [0, 8, 1000, 8193, 300_000, 3 << 20];
    run_hosts(2, 2, |e| {
        all_to_all(e, &sizes);
        ((), true)
    });
    run_hosts(3, 1, |e| {
        all_to_all(e, &sizes);
        ((), true)
    });
}

#[test]
fn a_synchronous_send_and_a_wildcard_receive_work_across_hosts() {
    run_hosts(2, 1, |e| {
        let data = pattern(5, 100_000);
        match e.world_rank() {
            0 => {
                // SAFETY: `data` outlives the wait below.
                match unsafe { e.issend(data.as_ptr(), data.len(), 1, 0, 3, 0) }.unwrap() {
                    Started::Done(_) => {}
                    Started::Pending(id) => _ = e.wait(id).unwrap(),
                }
                send(e, b"after", 1, 4);
            }
            _ => {
                let mut buf = vec![0u8; data.len()];
                let status = recv(e, &mut buf, None, None).unwrap();
                assert_eq!((status.source, status.tag, status.bytes), (0, 3, data.len()));
                assert!(buf == data);
                let mut tail = [0u8; 5];
                assert_eq!(recv(e, &mut tail, None, Some(4)).unwrap().bytes, 5);
                assert_eq!(&tail, b"after");
            }
        }
        ((), true)
    });
}

/// Starts a synchronous send of `data` to `dest` (tag `tag`).
fn issend(e: &mut Engine, data: &[u8], dest: usize, tag: i32) -> Option<grappe_proto::RequestId> {
    let me = e.world_rank() as u32;
    // SAFETY: every caller keeps `data` until the request completes.
    pending(unsafe { e.issend(data.as_ptr(), data.len(), dest, 0, tag, me) }.unwrap())
}

/// The request of a call that did not end at once.
fn pending(started: Started) -> Option<grappe_proto::RequestId> {
    match started {
        Started::Done(_) => None,
        Started::Pending(id) => Some(id),
    }
}

#[test]
fn a_synchronous_send_to_another_host_ends_only_once_a_receive_takes_it() {
    // Small (one record) and large (fragments) synchronous sends: each is
    // tested a hundred times before its receiver posts anything, and must
    // not be finished; then the receive (or a matched probe, which is a
    // match too) lets it end.
    for len in [16, 700_000] {
        let posted = Barrier::new(2);
        run_hosts(2, 1, |e| {
            match e.world_rank() {
                0 => {
                    let (first, second) = (pattern(1, len), pattern(2, len));
                    let ids = [issend(e, &first, 1, 1), issend(e, &second, 1, 2)];
                    let ids = ids.map(|id| id.expect("a synchronous send to another host cannot end at once"));
                    for _ in 0..100 {
                        assert!(e.test(ids[0]).unwrap().is_none(), "{len} bytes: ended before any receive");
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    posted.wait();
                    e.wait(ids[0]).unwrap();
                    e.wait(ids[1]).unwrap();
                }
                _ => {
                    posted.wait();
                    let mut buf = vec![0u8; len];
                    recv(e, &mut buf, Some(0), Some(1)).unwrap();
                    assert!(buf == pattern(1, len));
                    // The second is claimed by a matched probe, which ends
                    // its send, then received from the claim.
                    let status = e.claim_blocking(Some(0), 0, Some(2), 77).unwrap();
                    assert_eq!(status.bytes, len);
                    let target = grappe_proto::RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: len };
                    // SAFETY: `buf` outlives the wait.
                    match unsafe { e.irecv(target, Some(0), grappe_proto::CLAIMED_CTX, Some(77)) }.unwrap() {
                        Started::Done(_) => {}
                        Started::Pending(id) => _ = e.wait(id).unwrap(),
                    }
                    assert!(buf == pattern(2, len));
                }
            }
            ((), true)
        });
    }
}

#[test]
fn a_rank_lost_without_a_word_fails_its_peers_naming_it_and_its_host() {
    // Rank 1 (host 1) goes away without finalizing, its links closed, as
    // when its process or host dies: rank 0, waiting for it, fails.
    let outcomes = run_hosts(2, 1, |e| match e.world_rank() {
        0 => {
            let mut buf = [0u8; 8];
            (Some(recv(e, &mut buf, Some(1), None)), false)
        }
        _ => (None, false),
    });
    let error = outcomes[0].as_ref().unwrap().as_ref().unwrap_err();
    assert!(matches!(error, Error::PeerLost { rank: 1, host, .. } if host == "host1"), "{error}");
    assert!(error.to_string().starts_with("rank 1 on host host1 is lost: its link broke"), "{error}");
}

#[test]
fn ranks_that_finalize_close_their_links_without_an_error() {
    // Rank 1 finalizes and goes at once; rank 0 still receives what it
    // sent, then finalizes itself without seeing an error.
    run_hosts(2, 1, |e| {
        match e.world_rank() {
            0 => {
                std::thread::sleep(Duration::from_millis(50));
                let mut buf = vec![0u8; 20_000];
                recv(e, &mut buf, Some(1), Some(1)).unwrap();
                assert!(buf == pattern(9, 20_000));
                e.progress().unwrap();
                e.check_peers().unwrap();
            }
            _ => send(e, &pattern(9, 20_000), 0, 1),
        }
        ((), true)
    });
}

/// A blocking receive of `buf.len()` bytes from `src` with `tag`.
fn blocking_recv(e: &mut Engine, buf: &mut [u8], src: usize, tag: i32) {
    let target = grappe_proto::RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
    // SAFETY: `buf` outlives the call.
    let done = unsafe { e.recv(target, Some(src), 0, Some(tag)) }.unwrap();
    assert_eq!((done.status.source, done.status.tag, done.status.bytes), (src, tag, buf.len()));
}

#[test]
fn delayed_links_hold_every_message_and_wake_sleeping_ranks_when_it_is_due() {
    // Every frame across hosts is held 10 ms. The ranks sleep while they
    // wait (no spinning past a few polls, sleeps of up to 5 s): the sender
    // of a held frame must be woken when it is due, by the link's release
    // timer, to hand it to the socket; no sleep ends by timing out.
    let delay = Duration::from_millis(10);
    let layout = lay_out(2, 1, Some(Shaping { delay, rate: None }));
    let wait = WaitSettings {
        spin_iters: 10,
        yield_for: Duration::from_micros(100),
        sleep_timeout: Duration::from_secs(5),
        ..WaitSettings::default()
    };
    let rounds = 5;
    let outcomes = run_laid_out(layout, wait, |e| {
        let started = Instant::now();
        for round in 0..rounds {
            let mut buf = vec![0u8; 3000];
            // Blocking receives, as MPI's: they try the fast path first.
            match e.world_rank() {
                0 => {
                    send(e, &pattern(round, 3000), 1, 1);
                    blocking_recv(e, &mut buf, 1, 2);
                    assert!(buf == pattern(round + 100, 3000), "reply {round} differs");
                }
                _ => {
                    blocking_recv(e, &mut buf, 0, 1);
                    assert!(buf == pattern(round, 3000), "message {round} differs");
                    send(e, &pattern(round + 100, 3000), 0, 2);
                }
            }
        }
        let elapsed = started.elapsed();
        e.finalize().unwrap();
        ((elapsed, e.stats().sleeps_timed_out), false)
    });
    let (elapsed, _) = outcomes[0];
    let least = 2 * delay * rounds as u32;
    assert!(elapsed >= least, "{rounds} round trips took {elapsed:?}, less than twice the delay each");
    for (rank, (_, timed_out)) in outcomes.iter().enumerate() {
        assert_eq!(*timed_out, 0, "rank {rank} slept until its timeout: a held frame woke nobody");
    }
}

#[test]
fn a_link_cut_mid_job_fails_both_ends_naming_the_rank_and_host_lost() {
    // Ranks 0 and 1 wait for each other's message; the network under
    // their link fails: rank 0's side is cut. Rank 0 learns that the cut
    // was the fault injected, rank 1 that its peer's stream ended; each
    // names the other and its host.
    let mut layout = lay_out(2, 1, None);
    let cutter = layout.cutters.remove(&(0, 1)).unwrap();
    let cutting = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        cutter.cut().unwrap();
        cutter
    });
    let outcomes = run_laid_out(layout, WaitSettings { spin_iters: 200, ..WaitSettings::default() }, |e| {
        let mut buf = [0u8; 8];
        let other = 1 - e.world_rank();
        (recv(e, &mut buf, Some(other), None).map(|_| ()), false)
    });
    drop(cutting.join().unwrap());
    let error = outcomes[0].as_ref().unwrap_err();
    assert!(matches!(error, Error::PeerLost { rank: 1, host, .. } if host == "host1"), "{error}");
    assert!(error.to_string().contains("cut by fault injection"), "{error}");
    let error = outcomes[1].as_ref().unwrap_err();
    assert!(matches!(error, Error::PeerLost { rank: 0, host, .. } if host == "host0"), "{error}");
    assert!(error.to_string().contains("its link broke"), "{error}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn random_sizes_cross_hosts_intact(sizes in proptest::collection::vec(0usize..600_000, 1..6)) {
        run_hosts(2, 1, |e| {
            all_to_all(e, &sizes);
            ((), true)
        });
    }
}

/// Starts a send of `data` to `dest` (tag `tag`); its request if pending.
fn isend(e: &mut Engine, data: &[u8], dest: usize, tag: i32) -> Option<grappe_proto::RequestId> {
    let me = e.world_rank() as u32;
    // SAFETY: every caller keeps `data` until the request completes (or
    // abandons the request, which then owns a copy).
    pending(unsafe { e.isend(data.as_ptr(), data.len(), dest, 0, tag, me) }.unwrap())
}

/// Posts a receive into `buf`; its request if pending.
fn irecv(e: &mut Engine, buf: &mut [u8], src: usize, tag: i32) -> Option<grappe_proto::RequestId> {
    let target = grappe_proto::RecvTarget::Buffer { ptr: buf.as_mut_ptr(), cap: buf.len() };
    // SAFETY: every caller keeps `buf` until the request completes.
    pending(unsafe { e.irecv(target, Some(src), 0, Some(tag)) }.unwrap())
}

/// The smallest message a receiver on another host pulls.
const PULLED: usize = 64 << 10;

#[test]
fn a_large_send_to_another_host_waits_for_a_receive_while_small_ones_pass_it() {
    // Rank 0 sends a large message, then small ones behind it; rank 1
    // receives the small ones first. The large one is announced (a probe
    // sees its size) but stays in its sender's buffer, its send pending,
    // until the receive is posted: its receiver pulls it then.
    assert_eq!(ProtoSettings::for_ring(64 << 10).net_pull_min, PULLED);
    let posted = Barrier::new(2);
    run_hosts(2, 1, |e| {
        let large = pattern(9, 5 * PULLED + 17);
        match e.world_rank() {
            0 => {
                let id = isend(e, &large, 1, 1).expect("a pulled send cannot end before its receive");
                send(e, b"first", 1, 2);
                send(e, &pattern(3, 9000), 1, 3);
                for _ in 0..100 {
                    assert!(e.test(id).unwrap().is_none(), "the large send ended before any receive");
                    std::thread::sleep(Duration::from_micros(200));
                }
                posted.wait();
                e.wait(id).unwrap();
            }
            _ => {
                let mut small = [0u8; 5];
                recv(e, &mut small, Some(0), Some(2)).unwrap();
                assert_eq!(&small, b"first");
                let mut staged = vec![0u8; 9000];
                recv(e, &mut staged, Some(0), Some(3)).unwrap();
                assert!(staged == pattern(3, 9000));
                let status = e.probe(Some(0), 0, Some(1)).unwrap();
                assert_eq!(status.bytes, large.len(), "the offer announces the size");
                posted.wait();
                let mut buf = vec![0u8; large.len()];
                recv(e, &mut buf, Some(0), Some(1)).unwrap();
                assert!(buf == large);
            }
        }
        ((), true)
    });
}

#[test]
fn pulled_messages_taken_in_reverse_order_interleave_and_arrive_intact() {
    // Large messages from one sender, received in the reverse order with
    // every receive posted before any wait: their bytes come in records of
    // all of them at once; each lands in its own buffer. Among them, one
    // whole in its offer (a fragment of 128 KiB less the RTS's 32 bytes)
    // and one 31 bytes past it.
    let lens = [PULLED, 3 * PULLED + 5, 2 * PULLED - 1, 2 * PULLED - 32];
    run_hosts(2, 1, |e| {
        let messages: Vec<Vec<u8>> = lens.iter().enumerate().map(|(i, &len)| pattern(40 + i, len)).collect();
        match e.world_rank() {
            0 => {
                let ids: Vec<_> = messages.iter().enumerate().filter_map(|(i, m)| isend(e, m, 1, i as i32)).collect();
                ids.into_iter().for_each(|id| _ = e.wait(id).unwrap());
            }
            _ => {
                let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&len| vec![0u8; len]).collect();
                let ids: Vec<_> =
                    bufs.iter_mut().enumerate().rev().filter_map(|(i, buf)| irecv(e, buf, 0, i as i32)).collect();
                ids.into_iter().for_each(|id| _ = e.wait(id).unwrap());
                for (i, buf) in bufs.iter().enumerate() {
                    assert!(*buf == messages[i], "message {i} of {} bytes differs", lens[i]);
                }
            }
        }
        ((), true)
    });
}

#[test]
fn a_pulled_message_into_a_short_buffer_is_truncated_and_its_send_still_ends() {
    run_hosts(2, 1, |e| {
        let large = pattern(11, 2 * PULLED);
        match e.world_rank() {
            0 => {
                if let Some(id) = isend(e, &large, 1, 1) {
                    e.wait(id).unwrap();
                }
                send(e, b"next", 1, 2);
            }
            _ => {
                let mut short = vec![0u8; PULLED];
                let error = recv(e, &mut short, Some(0), Some(1)).unwrap_err();
                assert!(
                    matches!(error, Error::Truncated { message_bytes, buffer_bytes, .. }
                        if message_bytes == large.len() && buffer_bytes == PULLED),
                    "{error}"
                );
                assert!(short[..] == large[..PULLED], "the buffer holds the message's first bytes");
                let mut next = [0u8; 4];
                recv(e, &mut next, Some(0), Some(2)).unwrap();
                assert_eq!(&next, b"next", "the stream goes on after the truncated message");
            }
        }
        ((), true)
    });
}

#[test]
fn a_pulled_send_given_up_by_its_poster_still_delivers_what_it_held() {
    // The poster abandons the request and reuses its buffer before the
    // receiver pulls: the request goes on from its own copy.
    run_hosts(2, 1, |e| {
        let original = pattern(21, 3 * PULLED);
        match e.world_rank() {
            0 => {
                let mut data = original.clone();
                let id = isend(e, &data, 1, 1).expect("pending until pulled");
                e.abandon(id);
                data.fill(0);
                send(e, b"go", 1, 2);
                let mut done = [0u8; 4];
                recv(e, &mut done, Some(1), Some(3)).unwrap();
            }
            _ => {
                let mut go = [0u8; 2];
                recv(e, &mut go, Some(0), Some(2)).unwrap();
                let mut buf = vec![0u8; original.len()];
                recv(e, &mut buf, Some(0), Some(1)).unwrap();
                assert!(buf == original, "the message as it was when sent");
                send(e, b"done", 0, 3);
            }
        }
        ((), true)
    });
}
