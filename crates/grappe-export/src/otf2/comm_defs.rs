//! Communicator definitions: one OTF2 communicator per distinct grappe
//! communicator (context id *and* members, numbered by
//! [`grappe_analysis::Comms`]: the halves of a split share an id but not
//! a definition), its reference that number.

use std::collections::HashMap;

use grappe_analysis::Comms;

use crate::otf2::error::Otf2Error;
use crate::otf2::ffi::*;
use crate::otf2::strings::{Strings, reference};

type Result<T, E = Otf2Error> = std::result::Result<T, E>;

/// grappe's world communicator context: named `MPI_COMM_WORLD` unless a
/// trace says it was created with other members.
pub(crate) const WORLD_CONTEXT: u32 = 0;

pub(crate) struct CommGroups {
    /// (name, type, members) by group reference.
    pub groups: Vec<(OTF2_StringRef, OTF2_GroupType, Vec<u64>)>,
    /// (name, group) by communicator reference.
    pub comm: Vec<(OTF2_StringRef, OTF2_GroupRef)>,
}

/// Group 0 lists the world's locations (by world rank); each
/// communicator gets a sub-group of it, the same for equal member lists.
pub(crate) fn comm_groups(comms: &Comms, strings: &mut Strings, world: usize) -> Result<CommGroups> {
    let all: Vec<u64> = (0..world as u64).collect();
    let locations_name = strings.intern("MPI_COMM_WORLD locations")?;
    let mut out = CommGroups { groups: vec![(locations_name, OTF2_GROUP_TYPE_COMM_LOCATIONS, all)], comm: Vec::new() };
    let mut by_members: HashMap<Vec<u64>, OTF2_GroupRef> = HashMap::new();
    for (c, comm) in comms.all().iter().enumerate() {
        // Members that are not ranks of the job cannot be listed.
        let members: Vec<u64> = match &comm.members {
            Some(m) => m.iter().filter(|&&w| (w as usize) < world).map(|&w| w as u64).collect(),
            None => (0..world as u64).collect(),
        };
        let name = match (comm.id, comm.members.is_none()) {
            (WORLD_CONTEXT, true) => "MPI_COMM_WORLD".to_owned(),
            (id, true) => format!("comm {id} (never seen created: taken as world-sized)"),
            (_, false) => comms.name(c as u32),
        };
        let name = strings.intern(&name)?;
        let group = match by_members.get(&members) {
            Some(&g) => g,
            None => {
                // Named after the first communicator of these members.
                let g = reference(out.groups.len(), "groups")?;
                by_members.insert(members.clone(), g);
                out.groups.push((name, OTF2_GROUP_TYPE_COMM_GROUP, members));
                g
            }
        };
        out.comm.push((name, group));
    }
    Ok(out)
}

/// Communicator references, each after its parent (readers may resolve a
/// parent when they read its child); a parent cycle, which only a corrupt
/// trace could hold, is broken where it is found. `parents[c]` is the
/// parent of communicator `c`.
pub(crate) fn comm_order(parents: &[Option<u32>]) -> Vec<usize> {
    let mut order = Vec::with_capacity(parents.len());
    let mut state = vec![0u8; parents.len()]; // 0 new, 1 on the path, 2 placed
    for start in 0..parents.len() {
        let mut path = Vec::new();
        let mut c = start;
        while state[c] == 0 {
            state[c] = 1;
            path.push(c);
            match parents[c] {
                Some(p) if state.get(p as usize) == Some(&0) => c = p as usize,
                _ => break,
            }
        }
        for &c in path.iter().rev() {
            state[c] = 2;
            order.push(c);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_come_before_children_and_cycles_end() {
        let parents = [Some(1), Some(2), None, Some(4), Some(3)];
        let order = comm_order(&parents);
        assert_eq!(&order[..3], &[2, 1, 0]);
        assert_eq!(order.len(), 5);
    }
}
