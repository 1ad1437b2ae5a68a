//! The global definitions: numbered as events first use them, written
//! once every event is (OTF2 readers take the definitions from the end of
//! the archive, so nothing has to be known in advance).

use std::collections::HashMap;

use rustc_hash::FxHashMap;

use grappe_analysis::Comms;
use grappe_trace::{ANY, CollectiveKind, Members, Site};

use crate::otf2::comm_defs::{WORLD_CONTEXT, comm_groups, comm_order};
use crate::otf2::strings::{Strings, reference};

use crate::otf2::archive::GlobalDefs;
use crate::otf2::error::Otf2Error;
use crate::otf2::ffi::*;

type Result<T, E = Otf2Error> = std::result::Result<T, E>;

/// The runtime calls that become MPI regions, named as MPI names them so
/// that Vampir and Score-P's tools colour and group them as MPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Init,
    Finalize,
    Send,
    Recv,
    Isend,
    Irecv,
    Wait,
    Test,
    Probe,
    Iprobe,
    /// A send and the receive marked as its second half, one region as
    /// Score-P records `MPI_Sendrecv`.
    Sendrecv,
    Collective(CollectiveKind),
}

/// Calls before the collectives in `Call::index`.
const POINT_CALLS: usize = 11;
/// Every call, collectives included.
const CALLS: usize = POINT_CALLS + 16;

impl Call {
    fn index(self) -> usize {
        match self {
            Call::Init => 0,
            Call::Finalize => 1,
            Call::Send => 2,
            Call::Recv => 3,
            Call::Isend => 4,
            Call::Irecv => 5,
            Call::Wait => 6,
            Call::Test => 7,
            Call::Probe => 8,
            Call::Iprobe => 9,
            Call::Sendrecv => 10,
            // Collective ids run from 1 to 16.
            Call::Collective(op) => POINT_CALLS + (op as usize - 1),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        use CollectiveKind::*;
        match self {
            Call::Init => "MPI_Init",
            Call::Finalize => "MPI_Finalize",
            Call::Send => "MPI_Send",
            Call::Recv => "MPI_Recv",
            Call::Isend => "MPI_Isend",
            Call::Irecv => "MPI_Irecv",
            Call::Wait => "MPI_Wait",
            Call::Test => "MPI_Test",
            Call::Probe => "MPI_Probe",
            Call::Iprobe => "MPI_Iprobe",
            Call::Sendrecv => "MPI_Sendrecv",
            Call::Collective(op) => match op {
                Barrier => "MPI_Barrier",
                Bcast => "MPI_Bcast",
                Reduce => "MPI_Reduce",
                Allreduce => "MPI_Allreduce",
                Gather => "MPI_Gather",
                Gatherv => "MPI_Gatherv",
                Scatter => "MPI_Scatter",
                Scatterv => "MPI_Scatterv",
                Allgather => "MPI_Allgather",
                Allgatherv => "MPI_Allgatherv",
                Alltoall => "MPI_Alltoall",
                Alltoallv => "MPI_Alltoallv",
                Scan => "MPI_Scan",
                Exscan => "MPI_Exscan",
                ReduceScatter => "MPI_Reduce_scatter",
                ReduceScatterBlock => "MPI_Reduce_scatter_block",
            },
        }
    }

    /// The region role Score-P gives the MPI function.
    fn role(self) -> OTF2_RegionRole {
        use CollectiveKind::*;
        match self {
            Call::Init | Call::Finalize => OTF2_REGION_ROLE_FUNCTION,
            Call::Send | Call::Recv | Call::Isend | Call::Irecv | Call::Sendrecv => OTF2_REGION_ROLE_POINT2POINT,
            Call::Wait | Call::Test | Call::Probe | Call::Iprobe => OTF2_REGION_ROLE_POINT2POINT,
            Call::Collective(op) => match op {
                Barrier => OTF2_REGION_ROLE_BARRIER,
                Bcast | Scatter | Scatterv => OTF2_REGION_ROLE_COLL_ONE2ALL,
                Reduce | Gather | Gatherv => OTF2_REGION_ROLE_COLL_ALL2ONE,
                Allreduce | Allgather | Allgatherv | Alltoall | Alltoallv => OTF2_REGION_ROLE_COLL_ALL2ALL,
                ReduceScatter | ReduceScatterBlock => OTF2_REGION_ROLE_COLL_ALL2ALL,
                Scan | Exscan => OTF2_REGION_ROLE_COLL_OTHER,
            },
        }
    }
}

/// OTF2's name for a collective operation.
pub(crate) fn collective_op(op: CollectiveKind) -> OTF2_CollectiveOp {
    use CollectiveKind::*;
    match op {
        Barrier => OTF2_COLLECTIVE_OP_BARRIER,
        Bcast => OTF2_COLLECTIVE_OP_BCAST,
        Reduce => OTF2_COLLECTIVE_OP_REDUCE,
        Allreduce => OTF2_COLLECTIVE_OP_ALLREDUCE,
        Gather => OTF2_COLLECTIVE_OP_GATHER,
        Gatherv => OTF2_COLLECTIVE_OP_GATHERV,
        Scatter => OTF2_COLLECTIVE_OP_SCATTER,
        Scatterv => OTF2_COLLECTIVE_OP_SCATTERV,
        Allgather => OTF2_COLLECTIVE_OP_ALLGATHER,
        Allgatherv => OTF2_COLLECTIVE_OP_ALLGATHERV,
        Alltoall => OTF2_COLLECTIVE_OP_ALLTOALL,
        Alltoallv => OTF2_COLLECTIVE_OP_ALLTOALLV,
        Scan => OTF2_COLLECTIVE_OP_SCAN,
        Exscan => OTF2_COLLECTIVE_OP_EXSCAN,
        ReduceScatter => OTF2_COLLECTIVE_OP_REDUCE_SCATTER,
        ReduceScatterBlock => OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK,
    }
}

struct Region {
    name: OTF2_StringRef,
    role: OTF2_RegionRole,
    paradigm: OTF2_Paradigm,
    file: OTF2_StringRef,
    line: u32,
}

/// Where each rank ran, for the system tree.
pub(crate) struct RankPlace {
    pub host: Option<String>,
    pub pid: Option<u32>,
    /// The OS thread that ran it, if its file says.
    pub tid: Option<u32>,
    /// OTF2 events written on the rank's location.
    pub events: u64,
}

/// Every definition the events referenced so far.
#[derive(Default)]
pub(crate) struct Registry {
    strings: Strings,
    calls: [Option<OTF2_RegionRef>; CALLS],
    regions: Vec<Region>,
    user_regions: FxHashMap<(OTF2_StringRef, OTF2_StringRef), OTF2_RegionRef>,
    /// Communicators, numbered as OTF2 references.
    comms: Comms,
    /// Counter name -> metric (member and class share the number).
    metrics: FxHashMap<OTF2_StringRef, OTF2_MetricRef>,
    metric_names: Vec<OTF2_StringRef>,
    /// Point name -> parameter.
    parameters: FxHashMap<OTF2_StringRef, OTF2_ParameterRef>,
    parameter_names: Vec<OTF2_StringRef>,
    call_sites: CallSites,
}

/// Where the program made its calls: OTF2 source code locations (file
/// and line), each the value of the call-site attribute of a call's Enter.
#[derive(Default)]
struct CallSites {
    /// The attribute's name, once a call had a site.
    attribute: Option<(OTF2_StringRef, OTF2_StringRef)>,
    /// Location of each site seen (sites of one line share it).
    of_site: FxHashMap<usize, OTF2_SourceCodeLocationRef>,
    of_line: FxHashMap<(OTF2_StringRef, u32), OTF2_SourceCodeLocationRef>,
    /// (file, line) of each location.
    all: Vec<(OTF2_StringRef, u32)>,
}

/// The call-site attribute: the only attribute the export defines.
const CALL_SITE: OTF2_AttributeRef = 0;

impl Registry {
    pub(crate) fn new() -> Registry {
        let mut r = Registry::default();
        r.comms.uncreated(WORLD_CONTEXT);
        r
    }

    /// A string's reference, defining it if new.
    pub(crate) fn string(&mut self, s: &str) -> Result<OTF2_StringRef> {
        self.strings.intern(s)
    }

    /// A string's reference if it was ever defined.
    pub(crate) fn known_string(&self, s: &str) -> Option<OTF2_StringRef> {
        self.strings.get(s)
    }

    /// The region of a runtime call.
    #[inline]
    pub(crate) fn call(&mut self, call: Call) -> Result<OTF2_RegionRef> {
        if let Some(r) = self.calls[call.index()] {
            return Ok(r);
        }
        let name = self.strings.intern(call.name())?;
        let region =
            Region { name, role: call.role(), paradigm: OTF2_PARADIGM_MPI, file: OTF2_UNDEFINED_STRING, line: 0 };
        let r = self.add_region(region)?;
        self.calls[call.index()] = Some(r);
        Ok(r)
    }

    /// The region of a user's `name` entered at `location` ("file:line"),
    /// and the reference of its name.
    pub(crate) fn user_region(&mut self, name: &str, location: &str) -> Result<(OTF2_StringRef, OTF2_RegionRef)> {
        let name_ref = self.strings.intern(name)?;
        let location_ref = self.strings.intern(location)?;
        if let Some(&r) = self.user_regions.get(&(name_ref, location_ref)) {
            return Ok((name_ref, r));
        }
        let (file, line) = split_location(location);
        let file = if file.is_empty() { OTF2_UNDEFINED_STRING } else { self.strings.intern(file)? };
        let region =
            Region { name: name_ref, role: OTF2_REGION_ROLE_FUNCTION, paradigm: OTF2_PARADIGM_USER, file, line };
        let r = self.add_region(region)?;
        self.user_regions.insert((name_ref, location_ref), r);
        Ok((name_ref, r))
    }

    fn add_region(&mut self, region: Region) -> Result<OTF2_RegionRef> {
        let r = reference(self.regions.len(), "regions")?;
        self.regions.push(region);
        Ok(r)
    }

    /// The attribute and source code location that say a call was made at
    /// `site` ("file:line:column"; OTF2 keeps file and line).
    #[inline]
    pub(crate) fn call_site(&mut self, site: Site) -> Result<(OTF2_AttributeRef, OTF2_SourceCodeLocationRef)> {
        if let Some(&location) = self.call_sites.of_site.get(&site.key()) {
            return Ok((CALL_SITE, location));
        }
        self.new_call_site(site)
    }

    #[cold]
    fn new_call_site(&mut self, site: Site) -> Result<(OTF2_AttributeRef, OTF2_SourceCodeLocationRef)> {
        if self.call_sites.attribute.is_none() {
            let name = self.strings.intern("call site")?;
            let description = self.strings.intern("where the program made the call")?;
            self.call_sites.attribute = Some((name, description));
        }
        let (file, line) = split_location(site.text());
        let file = self.strings.intern(file)?;
        let sites = &mut self.call_sites;
        let location = match sites.of_line.get(&(file, line)) {
            Some(&location) => location,
            None => {
                let location = reference(sites.all.len(), "call sites")?;
                sites.all.push((file, line));
                sites.of_line.insert((file, line), location);
                location
            }
        };
        sites.of_site.insert(site.key(), location);
        Ok((CALL_SITE, location))
    }

    /// The communicator `rank` means by context id `id`.
    #[inline]
    pub(crate) fn comm(&mut self, rank: u32, id: u32) -> Result<OTF2_CommRef> {
        reference(self.comms.resolve(rank, id) as usize, "communicators")
    }

    /// `rank` joined communicator `id` of `members` (world ranks, in its
    /// rank order), made from `parent`. Each distinct communicator is
    /// defined once, from its first creation seen.
    pub(crate) fn comm_created(&mut self, rank: u32, id: u32, parent: u32, members: Members) -> Result<()> {
        reference(self.comms.created(rank, id, parent, members) as usize, "communicators").map(|_| ())
    }

    /// The rank in communicator `comm` of world rank `world`, as OTF2's
    /// message records want it. Communicators never seen created are taken
    /// as world-sized (their ranks are world ranks); a rank that is not a
    /// member keeps its world rank; an unknown one is OTF2's undefined.
    #[inline]
    pub(crate) fn comm_rank(&self, comm: OTF2_CommRef, world: u32) -> u32 {
        if world == ANY {
            return OTF2_UNDEFINED_UINT32;
        }
        self.comms.rank_in(comm, world).unwrap_or(world)
    }

    /// The metric class of a counter.
    pub(crate) fn metric(&mut self, name: &str) -> Result<OTF2_MetricRef> {
        let name = self.strings.intern(name)?;
        if let Some(&m) = self.metrics.get(&name) {
            return Ok(m);
        }
        let m = reference(self.metric_names.len(), "counters")?;
        self.metric_names.push(name);
        self.metrics.insert(name, m);
        Ok(m)
    }

    /// The parameter of a point event.
    pub(crate) fn parameter(&mut self, name: &str) -> Result<OTF2_ParameterRef> {
        let name = self.strings.intern(name)?;
        if let Some(&p) = self.parameters.get(&name) {
            return Ok(p);
        }
        let p = reference(self.parameter_names.len(), "point names")?;
        self.parameter_names.push(name);
        self.parameters.insert(name, p);
        Ok(p)
    }

    /// Writes every definition: clock, strings, system tree, locations,
    /// regions, groups, communicators, metrics, parameters, call sites. `ranks[r]` is
    /// world rank `r`, whose location and location group are numbered `r`;
    /// `clock` is the first timestamp and the trace's length.
    pub(crate) fn write(mut self, out: &mut GlobalDefs, ranks: &[RankPlace], clock: (u64, u64)) -> Result<()> {
        // Name everything first: strings are written before what uses them.
        let tree = self.system_tree(ranks)?;
        let mut locations = Vec::with_capacity(ranks.len());
        for (r, place) in ranks.iter().enumerate() {
            let group = self.strings.intern(&format!("rank {r}"))?;
            let name = match (place.pid, place.tid) {
                (Some(pid), Some(tid)) => format!("rank {r} (pid {pid}, tid {tid})"),
                (Some(pid), None) => format!("rank {r} (pid {pid})"),
                (None, _) => format!("rank {r} (not traced)"),
            };
            locations.push((group, self.strings.intern(&name)?));
        }
        let groups = comm_groups(&self.comms, &mut self.strings, ranks.len())?;
        let empty = self.strings.intern("")?;

        out.clock_properties(1_000_000_000, clock.0, clock.1, OTF2_UNDEFINED_TIMESTAMP)?;
        for (id, s) in self.strings.all().iter().enumerate() {
            out.string(id as OTF2_StringRef, s)?;
        }
        for (id, &(name, class, parent)) in tree.nodes.iter().enumerate() {
            out.system_tree_node(id as OTF2_SystemTreeNodeRef, name, class, parent)?;
        }
        for (r, &(group, name)) in locations.iter().enumerate() {
            let node = tree.node_of_rank[r];
            out.location_group(r as u32, group, OTF2_LOCATION_GROUP_TYPE_PROCESS, node, OTF2_UNDEFINED_LOCATION_GROUP)?;
            let events = ranks[r].events;
            out.location(r as u64, name, OTF2_LOCATION_TYPE_CPU_THREAD, events, r as u32)?;
        }
        for (id, g) in self.regions.iter().enumerate() {
            let id = id as OTF2_RegionRef;
            let (name, file, line) = (g.name, g.file, g.line);
            out.region(id, name, name, empty, g.role, g.paradigm, OTF2_REGION_FLAG_NONE, file, line, line)?;
        }
        for (id, (name, kind, members)) in groups.groups.iter().enumerate() {
            out.group(id as OTF2_GroupRef, *name, *kind, members)?;
        }
        let parents: Vec<Option<u32>> = self.comms.all().iter().map(|c| c.parent).collect();
        for c in comm_order(&parents) {
            let parent = parents[c];
            let (name, group) = groups.comm[c];
            out.comm(c as OTF2_CommRef, name, group, parent.unwrap_or(OTF2_UNDEFINED_COMM), OTF2_COMM_FLAG_NONE)?;
        }
        for (id, &name) in self.metric_names.iter().enumerate() {
            let id = id as OTF2_MetricRef;
            let (mode, value, base) = (OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_INT64, OTF2_BASE_DECIMAL);
            out.metric_member(id, name, empty, OTF2_METRIC_TYPE_USER, mode, value, base, 0, empty)?;
            out.metric_class(id, id)?;
        }
        for (id, &name) in self.parameter_names.iter().enumerate() {
            out.parameter(id as OTF2_ParameterRef, name, OTF2_PARAMETER_TYPE_STRING)?;
        }
        for (id, &(file, line)) in self.call_sites.all.iter().enumerate() {
            out.source_code_location(id as OTF2_SourceCodeLocationRef, file, line)?;
        }
        if let Some((name, description)) = self.call_sites.attribute {
            out.attribute(CALL_SITE, name, description, OTF2_TYPE_SOURCE_CODE_LOCATION)?;
        }
        Ok(())
    }

    /// A root node for the job, one node per host under it.
    fn system_tree(&mut self, ranks: &[RankPlace]) -> Result<SystemTree> {
        let root =
            (self.strings.intern("grappe job")?, self.strings.intern("machine")?, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
        let node_class = self.strings.intern("node")?;
        let mut tree = SystemTree { nodes: vec![root], node_of_rank: Vec::with_capacity(ranks.len()) };
        let mut hosts: HashMap<&str, OTF2_SystemTreeNodeRef> = HashMap::new();
        for place in ranks {
            let host = place.host.as_deref().unwrap_or("unknown host");
            let node = match hosts.get(host) {
                Some(&n) => n,
                None => {
                    let n = reference(tree.nodes.len(), "hosts")?;
                    tree.nodes.push((self.strings.intern(host)?, node_class, 0));
                    hosts.insert(host, n);
                    n
                }
            };
            tree.node_of_rank.push(node);
        }
        Ok(tree)
    }
}

struct SystemTree {
    /// (name, class, parent) by node reference.
    nodes: Vec<(OTF2_StringRef, OTF2_StringRef, OTF2_SystemTreeNodeRef)>,
    node_of_rank: Vec<OTF2_SystemTreeNodeRef>,
}

/// "src/main.rs:12:5" -> ("src/main.rs", 12); no line -> 0.
fn split_location(location: &str) -> (&str, u32) {
    let mut file = location;
    let mut line = 0;
    // Up to two numeric suffixes: a column after a line.
    for _ in 0..2 {
        match file.rsplit_once(':') {
            Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => {
                line = tail.parse().unwrap_or(0);
                file = head;
            }
            _ => break,
        }
    }
    (file, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_split_into_file_and_line() {
        assert_eq!(split_location("src/main.rs:12:5"), ("src/main.rs", 12));
        assert_eq!(split_location("synthetic.rs:1"), ("synthetic.rs", 1));
        assert_eq!(split_location("nowhere"), ("nowhere", 0));
        assert_eq!(split_location("c:\\x.rs:"), ("c:\\x.rs:", 0));
        assert_eq!(split_location(""), ("", 0));
    }

    #[test]
    fn calls_on_one_line_share_a_source_code_location() {
        let mut defs = Registry::new();
        let mut location = |text: &str| defs.call_site(Site::of(text).unwrap()).unwrap();
        let first = location("src/ring.rs:3:5");
        assert_eq!(first.0, CALL_SITE);
        assert_eq!(location("src/ring.rs:3:18"), first);
        assert_eq!(location("src/ring.rs:3:5"), first);
        assert_ne!(location("src/ring.rs:4:5"), first);
        assert_ne!(location("src/other.rs:3:5"), first);
        assert_eq!(defs.call_sites.all.len(), 3);
        let file = defs.known_string("src/ring.rs").unwrap();
        assert_eq!(defs.call_sites.all[first.1 as usize], (file, 3));
    }

    #[test]
    fn every_call_has_its_own_region_slot() {
        let mut calls = vec![Call::Init, Call::Finalize, Call::Send, Call::Recv, Call::Isend, Call::Irecv];
        calls.extend([Call::Wait, Call::Test, Call::Probe, Call::Iprobe, Call::Sendrecv]);
        calls.extend((1..=16).filter_map(CollectiveKind::from_id).map(Call::Collective));
        let mut slots: Vec<usize> = calls.iter().map(|c| c.index()).collect();
        slots.sort();
        assert_eq!(slots, (0..CALLS).collect::<Vec<_>>());
    }
}
