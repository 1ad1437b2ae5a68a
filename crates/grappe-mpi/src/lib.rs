//! grappe's MPI library for C programs, with MPICH's binary interface: a
//! program compiled against MPICH's `mpi.h` (Debian's `mpicc.mpich`) or
//! against grappe's runs on it unchanged, as `libmpi.so.12` or
//! `libmpich.so.12` (`scripts/build-mpi` links and installs it in
//! `target/mpi`).
//!
//! Every function exists as `PMPI_name` and as a weak `MPI_name` (for
//! profiling tools), takes the library's lock (see `state.rs`), runs under
//! `catch_unwind`, and reports a failure through the error handler of the
//! communicator concerned ([`call`]). Ranks are processes: C globals
//! belong to their process (`MPI_Init` refuses a process of several
//! thread ranks).
//!
//! What this version implements, and what it does not yet, is listed in
//! `docs/mpi.md`; functions it does not implement exist and fail with
//! `MPI_ERR_UNSUPPORTED_OPERATION`, naming themselves ([`unsupported`]).

pub mod abi;
mod api;
pub mod call;
pub mod datatype;
pub mod errors;
pub(crate) mod io;
pub mod reduce;
pub(crate) mod state;
pub mod types;
pub mod unsupported;
pub(crate) mod waiting;
