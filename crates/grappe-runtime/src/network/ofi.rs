//! The links between hosts over libfabric (`GRAPPE_FABRIC=ofi`): one
//! endpoint per process, whose name is published in the key-value space
//! (`grappe-ofi-P`) as a TCP address is, and a link over it between every
//! rank of the process and every rank of another host.
//!
//! An endpoint takes messages from anyone who has its address, so each
//! link authenticates with a record of its own before the engine gets it:
//! both ends first send a proof ([`Secret::prove`]) that they hold the
//! job's secret, bound to the job, the two ranks and the sender's
//! published name, and each end checks its peer's before anything else.
//! A link whose first record is not a valid proof (a stranger, a process
//! of another job, a wrong secret) fails the start of the job, naming the
//! rank and the address.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::IpAddr;
use std::ops::Range;
use std::time::{Duration, Instant};

use grappe_fabric::link::{Inbox, Outbox};
use grappe_fabric_ofi::{Config, Endpoint, Ends, Link, name_from_text, name_to_text};
use grappe_fabric_tcp::Secret;
use grappe_launch::Pmi;
use grappe_proto::RemoteLink;

use super::{Result, SET_UP};
use crate::StartError;
use crate::job::Placement;

/// The label of a link's proof: a proof for anything else is no proof.
const PROOF_LABEL: &[u8] = b"grappe-ofi link proof, v1";
/// The protocol words of a proof record (`GOFP`), never an engine record:
/// the engine gets the link after it.
const PROOF_META: [u32; 4] = [0x474f_4650, 0, 0, 0];

/// Links by (rank of this process, rank of another host).
pub(crate) type ByPair = HashMap<(usize, usize), Link>;

/// How often the endpoint is driven when no rank drives it: a quarter of
/// its keepalive period (one second).
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// This process's endpoint, its name published.
pub(crate) struct Opened {
    endpoint: Endpoint,
}

/// Opens the endpoint on `ip` and publishes its name.
pub(crate) fn open(
    pmi: &mut dyn Pmi,
    me: usize,
    provider: Option<String>,
    ip: IpAddr,
    lost_after: Duration,
) -> Result<Opened> {
    let config = Config { provider: provider.clone(), node: Some(ip.to_string()), lost_after, ..Config::default() };
    let endpoint = Endpoint::open(&config).map_err(|error| {
        let setting = match &provider {
            Some(provider) => format!("GRAPPE_FABRIC=ofi with provider {provider:?}"),
            None => "GRAPPE_FABRIC=ofi".to_owned(),
        };
        let offered = grappe_fabric_ofi::providers(Some(&ip.to_string()));
        let offered = match offered.is_empty() {
            true => "none".to_owned(),
            false => offered.join(", "),
        };
        StartError::NetworkSetUp(format!(
            "{setting}: cannot open a libfabric endpoint on {ip}: {error} \
             (providers of reliable datagram endpoints here: {offered})"
        ))
    })?;
    pmi.put(&format!("grappe-ofi-{me}"), &name_to_text(endpoint.name()))?;
    Ok(Opened { endpoint })
}

impl Opened {
    /// Makes the links of the ranks of `mine` with every rank of the other
    /// hosts, and checks that each peer holds the job's secret.
    pub fn connect_all(
        self,
        pmi: &mut dyn Pmi,
        secret: &Secret,
        placement: &Placement,
        mine: Range<usize>,
    ) -> Result<(Endpoint, ByPair)> {
        let job = pmi.job_id().to_owned();
        let here = placement.rank_host[mine.start];
        let remote: Vec<usize> = (0..placement.rank_host.len()).filter(|&q| placement.rank_host[q] != here).collect();
        let mut names: HashMap<usize, Vec<u8>> = HashMap::new();
        let mut links = Vec::new();
        for r in mine.clone() {
            for &q in &remote {
                let process = placement.process_of(q);
                if let Entry::Vacant(slot) = names.entry(process) {
                    let value = pmi.get(&format!("grappe-ofi-{process}"))?;
                    let name = name_from_text(&value).map_err(|e| {
                        StartError::NetworkSetUp(format!(
                            "process {process} published the libfabric endpoint name {value:?}, which is not one: {e}"
                        ))
                    })?;
                    slot.insert(name);
                }
                let ends = Ends { local: r as u32, remote: q as u32 };
                let link = self.endpoint.link(&names[&process], ends).map_err(|e| {
                    StartError::NetworkSetUp(format!("rank {r} making its libfabric link to rank {q}: {e}"))
                })?;
                links.push(Authenticating { rank: r, peer: q, link });
            }
        }
        let my_name = self.endpoint.name().to_vec();
        let peer_name = |q: usize| names[&placement.process_of(q)].as_slice();
        authenticate(&mut links, secret, &job, &my_name, peer_name, Instant::now() + SET_UP)?;
        let links = links.into_iter().map(|a| ((a.rank, a.peer), a.link)).collect();
        // Keepalives and loss detection go on while the ranks compute.
        self.endpoint.keep_progressing(PROGRESS_EVERY).map_err(|e| {
            StartError::NetworkSetUp(format!("cannot start the libfabric endpoint's progress thread: {e}"))
        })?;
        Ok((self.endpoint, links))
    }
}

/// A link whose peer has not proved yet that it holds the secret.
pub(crate) struct Authenticating {
    /// The rank of this process.
    pub rank: usize,
    /// The rank at the other end.
    pub peer: usize,
    /// The link.
    pub link: Link,
}

/// What rank `from` proves to rank `to` of job `job`, at `name`.
fn proof(secret: &Secret, job: &str, from: usize, to: usize, name: &[u8]) -> [u8; grappe_fabric_tcp::MAC_BYTES] {
    secret.prove(PROOF_LABEL, &[job.as_bytes(), &(from as u64).to_le_bytes(), &(to as u64).to_le_bytes(), name])
}

/// True if `given` is what rank `from` at `name` proves to rank `to`.
fn proof_holds(secret: &Secret, job: &str, from: usize, to: usize, name: &[u8], given: &[u8]) -> bool {
    let parts: [&[u8]; 4] = [job.as_bytes(), &(from as u64).to_le_bytes(), &(to as u64).to_le_bytes(), name];
    secret.verify(PROOF_LABEL, &parts, given)
}

/// Sends this side's proof on every link, then reads the peers' proofs
/// until `deadline`: the first record of each link must be the proof of
/// its peer, at `peer_name(peer)`, the name it published.
pub(crate) fn authenticate<'a>(
    links: &mut [Authenticating],
    secret: &Secret,
    job: &str,
    my_name: &[u8],
    peer_name: impl Fn(usize) -> &'a [u8],
    deadline: Instant,
) -> Result<()> {
    for a in links.iter_mut() {
        let mine = proof(secret, job, a.rank, a.peer, my_name);
        let failed = |e| StartError::NetworkSetUp(format!("rank {} sending its proof to rank {}: {e}", a.rank, a.peer));
        if !a.link.try_push(PROOF_META, &mine).map_err(failed)? {
            return Err(StartError::NetworkSetUp(format!(
                "rank {}: the libfabric link to rank {} refused its first record",
                a.rank, a.peer
            )));
        }
    }
    let mut waiting: Vec<usize> = (0..links.len()).collect();
    while !waiting.is_empty() {
        let mut still = Vec::with_capacity(waiting.len());
        for i in waiting {
            let a = &mut links[i];
            let _ = a.link.flush();
            let address = a.link.peer().to_owned();
            let (rank, peer) = (a.rank, a.peer);
            let refused = |detail: String| {
                StartError::NetworkSetUp(format!(
                    "rank {rank} refused its libfabric link with rank {peer} ({address}): {detail}"
                ))
            };
            let record = a.link.peek().map_err(|e| refused(format!("{e}")))?;
            let Some(record) = record else {
                still.push(i);
                continue;
            };
            let holds = record.meta() == PROOF_META
                && proof_holds(secret, job, a.peer, a.rank, peer_name(a.peer), record.payload());
            if !holds {
                crate::say(&format!(
                    "warning: dropped a libfabric message from {address} claiming to be rank {peer}: \
                     not a proof of the job's secret"
                ));
                return Err(refused(
                    "its first message does not prove the job's secret (a stranger, or a process of another job)"
                        .into(),
                ));
            }
            a.link.consume();
        }
        waiting = still;
        if waiting.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            let a = &links[waiting[0]];
            return Err(StartError::NetworkSetUp(format!(
                "rank {} had no proof from rank {} over libfabric ({}) within {:?} ({} links waiting)",
                a.rank,
                a.peer,
                a.link.peer(),
                SET_UP,
                waiting.len()
            )));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// The engine's two sides of `link`, to a rank of host `host`.
pub(crate) fn remote_link(link: Link, host: String, host_index: usize) -> RemoteLink {
    let (out, inbox) = link.split();
    RemoteLink { out: Outbox::Ofi(Box::new(out)), inbox: Inbox::Ofi(Box::new(inbox)), host, host_index }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two endpoints on the loopback and the link between ranks 0 and 1,
    /// one side each.
    fn pair() -> (Endpoint, Endpoint, Authenticating, Authenticating) {
        let open = || Endpoint::open(&Config::new("tcp;ofi_rxm", "127.0.0.1")).expect("tcp;ofi_rxm on the loopback");
        let (a, b) = (open(), open());
        let ab = a.link(b.name(), Ends { local: 0, remote: 1 }).unwrap();
        let ba = b.link(a.name(), Ends { local: 1, remote: 0 }).unwrap();
        let (ab, ba) = (Authenticating { rank: 0, peer: 1, link: ab }, Authenticating { rank: 1, peer: 0, link: ba });
        (a, b, ab, ba)
    }

    /// Authenticates both sides at once (each on its own thread), `a`
    /// with `secret_a` and `b` with `secret_b`; their outcomes.
    fn both(secret_a: Secret, secret_b: Secret) -> (Result<()>, Result<()>, Vec<u8>) {
        let (a, b, mut ab, mut ba) = pair();
        let (name_a, name_b) = (a.name().to_vec(), b.name().to_vec());
        let deadline = Instant::now() + Duration::from_secs(10);
        let name_of_a = name_a.clone();
        let side_b = std::thread::spawn(move || {
            let outcome =
                authenticate(std::slice::from_mut(&mut ba), &secret_b, "job", &name_b, |_| &name_of_a[..], deadline);
            (outcome, ba)
        });
        let name_b = b.name().to_vec();
        let outcome_a =
            authenticate(std::slice::from_mut(&mut ab), &secret_a, "job", &name_a, |_| &name_b[..], deadline);
        let (outcome_b, _ba) = side_b.join().unwrap();
        (outcome_a, outcome_b, name_b)
    }

    #[test]
    fn peers_holding_the_secret_authenticate_and_their_records_follow() {
        let secret = Secret::generate();
        let (a, b, mut ab, mut ba) = pair();
        let (name_a, name_b) = (a.name().to_vec(), b.name().to_vec());
        let deadline = Instant::now() + Duration::from_secs(10);
        let theirs = secret.clone();
        let side_b = std::thread::spawn(move || {
            authenticate(std::slice::from_mut(&mut ba), &theirs, "job", &name_b, |_| &name_a[..], deadline).unwrap();
            assert!(ba.link.try_push([7, 0, 0, 0], b"after the proof").unwrap());
            while !ba.link.flush().unwrap() {}
            ba
        });
        let name_b = b.name().to_vec();
        authenticate(std::slice::from_mut(&mut ab), &secret, "job", a.name(), |_| &name_b[..], deadline).unwrap();
        let _ba = side_b.join().unwrap();
        // The engine's first record is the peer's first after its proof.
        let record = loop {
            if let Some(record) = ab.link.peek().unwrap() {
                break (record.meta(), record.payload().to_vec());
            }
        };
        assert_eq!(record, ([7, 0, 0, 0], b"after the proof".to_vec()));
    }

    #[test]
    fn a_wrong_secret_fails_on_both_sides_naming_the_peer() {
        let (outcome_a, outcome_b, _) = both(Secret::generate(), Secret::generate());
        for (outcome, (rank, peer)) in [(outcome_a, (0, 1)), (outcome_b, (1, 0))] {
            let error = outcome.expect_err("a peer with another secret is refused").to_string();
            assert!(
                error.contains(&format!("rank {rank} refused its libfabric link with rank {peer} (fi_"))
                    && error.contains("does not prove the job's secret"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_proof_is_bound_to_the_job_the_ranks_and_the_address() {
        let secret = Secret::generate();
        let given = proof(&secret, "job", 1, 0, b"name-of-1");
        assert!(proof_holds(&secret, "job", 1, 0, b"name-of-1", &given));
        assert!(!proof_holds(&secret, "other-job", 1, 0, b"name-of-1", &given), "another job");
        assert!(!proof_holds(&secret, "job", 2, 0, b"name-of-1", &given), "another rank");
        assert!(!proof_holds(&secret, "job", 1, 3, b"name-of-1", &given), "for another rank");
        assert!(!proof_holds(&secret, "job", 1, 0, b"name-of-2", &given), "from another address");
    }
}
