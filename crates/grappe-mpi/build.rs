//! Generates the functions of MPICH's interface (abi/functions.txt) that
//! this library does not implement: every `MPI_name` that no source file
//! defines with `mpi_fn!` (`fn MPI_name / PMPI_name`), `counted_fn!`
//! (`fn MPI_name / PMPI_name, MPI_name_c / PMPI_name_c`) or `weak_alias!`
//! gets a stub that fails with `MPI_ERR_UNSUPPORTED_OPERATION`, so that
//! programs and mpi4py link and load, and learn at the call which
//! function is missing.

use std::collections::BTreeSet;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=abi/functions.txt");
    println!("cargo:rerun-if-changed=src");
    let listed = std::fs::read_to_string("abi/functions.txt").expect("abi/functions.txt");
    let mut implemented = BTreeSet::new();
    collect_implemented(Path::new("src"), &mut implemented);
    let mut stubs = String::new();
    for name in listed.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if implemented.contains(name) {
            continue;
        }
        let pname = format!("P{name}");
        stubs.push_str(&format!(
            "#[unsafe(no_mangle)]\npub extern \"C\" fn {pname}() -> std::ffi::c_int {{ crate::unsupported::fail(\"{name}\") }}\ncrate::weak_alias!({name}, {pname});\n"
        ));
    }
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("unsupported.rs");
    std::fs::write(out, stubs).expect("write the stubs");
}

/// Names defined by `fn MPI_x / PMPI_x` or `weak_alias!(MPI_x, ...)` in the sources.
fn collect_implemented(dir: &Path, names: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_implemented(&path, names);
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in text.lines().map(str::trim) {
            let name = if let Some(rest) = line.strip_prefix("fn MPI_") {
                rest.split_whitespace().next().map(|n| format!("MPI_{n}"))
            } else if let Some(rest) = line.strip_prefix("weak_alias!(MPI_") {
                rest.split(',').next().map(|n| format!("MPI_{n}"))
            } else if let Some(rest) = line.strip_prefix("isend_fn!(").or_else(|| line.strip_prefix("some_fn!(")) {
                let _ = rest;
                None
            } else if let Some(rest) = line.strip_prefix("MPI_") {
                // The functions of a macro's invocations: `MPI_x / PMPI_x`.
                rest.split_once(" / PMPI_").map(|(n, _)| format!("MPI_{n}"))
            } else {
                None
            };
            if let Some(name) = name {
                names.insert(name.trim_end_matches(['(', ',']).to_owned());
                // A `counted_fn!`'s second function, the `_c` form: `fn MPI_x / PMPI_x, MPI_x_c / PMPI_x_c(`.
                for pair in line.split(", MPI_").skip(1) {
                    if let Some((n, _)) = pair.split_once(" / PMPI_") {
                        names.insert(format!("MPI_{n}"));
                    }
                }
            }
        }
    }
}
