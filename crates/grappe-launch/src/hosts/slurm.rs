//! A Slurm allocation as the job's hosts: `grappe run` inside `salloc` or `sbatch` runs across
//! the allocation's nodes, as hydra's `mpiexec` and Open MPI's `mpirun` do, each node's agent
//! started by `srun` (one task on that node, in the allocation).
//!
//! Slurm describes the allocation in the environment: `SLURM_JOB_NODELIST` (`node[01-04,9],gpu7`,
//! Slurm's compressed host list) and `SLURM_TASKS_PER_NODE` (`2(x3),1`: counts, each repeated
//! `xN` times), which become the hosts and their slots. Both are expanded by hand: Slurm's own
//! parser is in libslurm, which has no stable API to link against, and no crate reads them.

use super::HostSlots;

/// The remote shell that starts an agent on one node of the allocation: called as
/// `srun ... --nodelist HOST grappe agent`. `--overlap` lets it share the node with other steps
/// (the batch script's own, or ranks started by another `grappe run`); `--unbuffered` passes the
/// agent's frames on as they come, not line by line.
pub const SRUN_LAUNCHER: [&str; 8] = [
    "srun",
    "--nodes=1",
    "--ntasks=1",
    "--overlap",
    "--unbuffered",
    "--mpi=none",
    "--kill-on-bad-exit=1",
    "--nodelist",
];

/// More hosts than any allocation has: a list that expands past it is refused rather than
/// exhausting memory.
const MOST_HOSTS: usize = 1 << 20;

/// Why an allocation described by Slurm's variables was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?}: {reason}")]
pub struct SlurmError {
    pub variable: &'static str,
    pub value: String,
    pub reason: String,
}

/// The hosts of the allocation this process runs in, if it runs in one: `lookup` reads the
/// environment.
pub fn allocation(lookup: impl Fn(&str) -> Option<String>) -> Option<Result<Vec<HostSlots>, SlurmError>> {
    let (variable, nodes) = ["SLURM_JOB_NODELIST", "SLURM_NODELIST"]
        .into_iter()
        .find_map(|variable| lookup(variable).map(|value| (variable, value)))?;
    Some(hosts_of(variable, &nodes, lookup))
}

fn hosts_of(
    variable: &'static str,
    nodes: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Vec<HostSlots>, SlurmError> {
    let names = expand_host_list(nodes).map_err(|reason| SlurmError { variable, value: nodes.to_owned(), reason })?;
    let counts = match ["SLURM_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"]
        .into_iter()
        .find_map(|variable| lookup(variable).map(|value| (variable, value)))
    {
        None => vec![1; names.len()],
        Some((variable, text)) => {
            let refuse = |reason: String| SlurmError { variable, value: text.clone(), reason };
            let counts = expand_counts(&text).map_err(refuse)?;
            if counts.len() != names.len() {
                return Err(refuse(format!("{} counts for the {} nodes of {nodes}", counts.len(), names.len())));
            }
            counts
        }
    };
    Ok(names.into_iter().zip(counts).map(|(name, slots)| HostSlots { name, slots }).collect())
}

/// Expands Slurm's compressed host list: `a[1-3,07],b` gives a1 a2 a3 a07 b; ranges keep the
/// width of their first bound (`[08-10]` gives 08 09 10); several brackets in one name expand in
/// every combination, the last varying fastest.
pub fn expand_host_list(text: &str) -> Result<Vec<String>, String> {
    let mut hosts = Vec::new();
    for entry in split_outside_brackets(text)? {
        if entry.is_empty() {
            return Err("an empty host name".to_owned());
        }
        expand_entry(entry, &mut hosts)?;
    }
    match hosts.is_empty() {
        true => Err("no host".to_owned()),
        false => Ok(hosts),
    }
}

/// The entries of a list, split at the commas that are not between brackets.
fn split_outside_brackets(text: &str) -> Result<Vec<&str>, String> {
    let (mut entries, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (at, c) in text.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err(format!("a bracket inside a bracket at byte {at}")),
            ']' if depth == 1 => depth = 0,
            ']' => return Err(format!("a closing bracket with none open at byte {at}")),
            ',' if depth == 0 => {
                entries.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err("a bracket that is never closed".to_owned());
    }
    entries.push(&text[start..]);
    Ok(entries)
}

/// Appends the hosts of one entry (`a[1-2]b[3,5]`) to `hosts`.
fn expand_entry(entry: &str, hosts: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = entry.find('[') else {
        hosts.push(entry.to_owned());
        return Ok(());
    };
    let close = open + entry[open..].find(']').expect("brackets were checked");
    let (prefix, ranges, rest) = (&entry[..open], &entry[open + 1..close], &entry[close + 1..]);
    let numbers = expand_ranges(ranges)?;
    let mut tails = Vec::new();
    expand_entry(rest, &mut tails)?;
    if numbers.len().saturating_mul(tails.len()) > MOST_HOSTS - hosts.len() {
        return Err(format!("more than {MOST_HOSTS} hosts"));
    }
    for number in &numbers {
        hosts.extend(tails.iter().map(|tail| format!("{prefix}{number}{tail}")));
    }
    Ok(())
}

/// `1-3,07` gives 1 2 3 07.
fn expand_ranges(ranges: &str) -> Result<Vec<String>, String> {
    let mut numbers = Vec::new();
    for range in ranges.split(',') {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        let bound = |text: &str| -> Result<u64, String> {
            match !text.is_empty() && text.len() <= 18 && text.bytes().all(|b| b.is_ascii_digit()) {
                true => Ok(text.parse().expect("digits")),
                false => Err(format!("`{range}` in `[{ranges}]` is not a number or a range of numbers")),
            }
        };
        let (low, high) = (bound(first)?, bound(last)?);
        if high < low {
            return Err(format!("the range `{range}` in `[{ranges}]` goes down"));
        }
        if high - low >= (MOST_HOSTS - numbers.len()) as u64 {
            return Err(format!("more than {MOST_HOSTS} hosts"));
        }
        numbers.extend((low..=high).map(|n| format!("{n:0width$}", width = first.len())));
    }
    Ok(numbers)
}

/// Expands Slurm's counts per node: `2(x3),1` gives 2 2 2 1.
pub fn expand_counts(text: &str) -> Result<Vec<usize>, String> {
    let mut counts = Vec::new();
    for item in text.split(',') {
        let (count, times) = match item.split_once('(') {
            None => (item, "1"),
            Some((count, times)) => {
                let times = times.strip_prefix('x').and_then(|t| t.strip_suffix(')'));
                (count, times.ok_or_else(|| format!("`{item}` is not N or N(xM)"))?)
            }
        };
        let number = |text: &str| text.parse::<usize>().ok().filter(|&n| n > 0);
        let (count, times) = match (number(count), number(times)) {
            (Some(count), Some(times)) => (count, times),
            _ => return Err(format!("`{item}` is not N or N(xM) with positive numbers")),
        };
        if times > MOST_HOSTS - counts.len() {
            return Err(format!("more than {MOST_HOSTS} nodes"));
        }
        counts.extend(std::iter::repeat_n(count, times));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn host_lists_expand_as_slurm_writes_them() {
        assert_eq!(expand_host_list("node[1-3,07],login").unwrap(), ["node1", "node2", "node3", "node07", "login"]);
        assert_eq!(expand_host_list("n[08-10]").unwrap(), ["n08", "n09", "n10"]);
        assert_eq!(expand_host_list("r[1-2]c[0,5]").unwrap(), ["r1c0", "r1c5", "r2c0", "r2c5"]);
        assert_eq!(expand_host_list("a-b.example").unwrap(), ["a-b.example"]);
    }

    #[test]
    fn bad_host_lists_say_what_is_wrong() {
        let error = |text: &str| expand_host_list(text).unwrap_err();
        assert_eq!(error("n[1-"), "a bracket that is never closed");
        assert_eq!(error("n[3-1]"), "the range `3-1` in `[3-1]` goes down");
        assert_eq!(error("n[a]"), "`a` in `[a]` is not a number or a range of numbers");
        assert_eq!(error("n]"), "a closing bracket with none open at byte 1");
        assert_eq!(error("a,,b"), "an empty host name");
        assert_eq!(error("n[0-99999999]"), format!("more than {MOST_HOSTS} hosts"));
        assert_eq!(error("n[0-999]m[0-9999]"), format!("more than {MOST_HOSTS} hosts"));
    }

    #[test]
    fn counts_expand_and_bad_ones_are_refused() {
        assert_eq!(expand_counts("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(expand_counts("4").unwrap(), [4]);
        assert_eq!(expand_counts("2(3)").unwrap_err(), "`2(3)` is not N or N(xM)");
        assert_eq!(expand_counts("0").unwrap_err(), "`0` is not N or N(xM) with positive numbers");
        assert_eq!(expand_counts("1(x99999999999)").unwrap_err(), format!("more than {MOST_HOSTS} nodes"));
    }

    #[test]
    fn the_allocation_pairs_nodes_with_their_counts() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.to_string())
        };
        assert_eq!(allocation(vars(&[])), None, "outside an allocation");
        let hosts = allocation(vars(&[("SLURM_JOB_NODELIST", "c[1-3]"), ("SLURM_TASKS_PER_NODE", "2(x2),1")]));
        let slots: Vec<(String, usize)> = hosts.unwrap().unwrap().into_iter().map(|h| (h.name, h.slots)).collect();
        assert_eq!(slots, [("c1".to_owned(), 2), ("c2".to_owned(), 2), ("c3".to_owned(), 1)]);
        let one_each = allocation(vars(&[("SLURM_NODELIST", "a,b")])).unwrap().unwrap();
        assert!(one_each.iter().all(|h| h.slots == 1));
        let mismatch = allocation(vars(&[("SLURM_JOB_NODELIST", "c[1-3]"), ("SLURM_TASKS_PER_NODE", "2(x2)")]));
        assert_eq!(
            mismatch.unwrap().unwrap_err().to_string(),
            "SLURM_TASKS_PER_NODE=\"2(x2)\": 2 counts for the 3 nodes of c[1-3]"
        );
    }

    /// Slurm's compression of a set of numbered hosts: runs of consecutive numbers as ranges.
    fn compress(prefix: &str, numbers: &[u32]) -> String {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &n in numbers {
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == n => *last = n,
                _ => runs.push((n, n)),
            }
        }
        let ranges: Vec<String> =
            runs.iter().map(|&(a, b)| if a == b { format!("{a}") } else { format!("{a}-{b}") }).collect();
        format!("{prefix}[{}]", ranges.join(","))
    }

    proptest! {
        /// A set of hosts compressed as Slurm does expands back to the same hosts, in order.
        #[test]
        fn compressed_lists_expand_back(set in proptest::collection::btree_set(0u32..500, 1..40), prefix in "[a-z]{1,5}") {
            let numbers: Vec<u32> = set.into_iter().collect();
            let expected: Vec<String> = numbers.iter().map(|n| format!("{prefix}{n}")).collect();
            prop_assert_eq!(expand_host_list(&compress(&prefix, &numbers)).unwrap(), expected);
        }

        /// No text makes the expansion panic.
        #[test]
        fn any_text_is_expanded_or_refused(text in "[a-c0-9,\\[\\]\\-x()]{0,24}") {
            let _ = expand_host_list(&text);
            let _ = expand_counts(&text);
        }
    }
}
