//! With feature `libfabric`: binds libfabric (found by pkg-config, 1.17 or
//! later) and refuses to build without it. Without the feature: nothing,
//! the library is not needed.
//!
//! Most of libfabric's API is `static inline` functions in its headers
//! (`fi_domain`, `fi_endpoint`, `fi_tsend`, `fi_cq_read`... call through
//! the provider's operation tables): the shared library exports only a
//! handful (`fi_getinfo`, `fi_fabric`, `fi_strerror`). bindgen reads the
//! headers, which gives the structures' layouts as the compiler sees them
//! (no hand-copied `fi_info` or `fi_cq_err_entry` to drift), and with
//! `wrap_static_fns` writes a C file of exported wrappers around the
//! inline functions, compiled here by `cc`, that the bindings call.

#[cfg(feature = "libfabric")]
use std::path::PathBuf;
#[cfg(feature = "libfabric")]
use std::process::{Command, exit};

#[cfg(feature = "libfabric")]
const MINIMUM: &str = "1.17";

/// The libfabric functions the crate calls; bindgen pulls in the types
/// they need.
#[cfg(feature = "libfabric")]
const FUNCTIONS: &[&str] = &[
    "fi_allocinfo",
    "fi_av_insert",
    "fi_av_open",
    "fi_av_straddr",
    "fi_cancel",
    "fi_close",
    "fi_control",
    "fi_cq_open",
    "fi_cq_read",
    "fi_cq_readerr",
    "fi_cq_strerror",
    "fi_domain",
    "fi_enable",
    "fi_endpoint",
    "fi_ep_bind",
    "fi_fabric",
    "fi_freeinfo",
    "fi_getinfo",
    "fi_getname",
    "fi_recv",
    "fi_send",
    "fi_strerror",
    "fi_trecv",
    "fi_trywait",
    "fi_tsend",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/fabric.h");
    #[cfg(feature = "libfabric")]
    bind();
}

#[cfg(feature = "libfabric")]
fn bind() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");
    if Command::new("pkg-config").arg("--version").output().is_err() {
        missing("pkg-config is not installed");
    }
    let Some(version) = pkg_config(&["--modversion", "libfabric"]) else {
        missing("pkg-config does not know the libfabric package");
    };
    if pkg_config(&["--atleast-version", MINIMUM, "libfabric"]).is_none() {
        missing(&format!("libfabric {version} is installed, grappe-fabric-ofi needs {MINIMUM} or later"));
    }
    let cflags = pkg_config(&["--cflags", "libfabric"]).unwrap_or_default();
    let includes: Vec<&str> = cflags.split_whitespace().filter_map(|flag| flag.strip_prefix("-I")).collect();

    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let header = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("src/fabric.h");
    let wrappers = out.join("fabric_inline");
    let mut builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(includes.iter().map(|dir| format!("-I{dir}")))
        .allowlist_var("FI_.*")
        .allowlist_type("fi_cq_tagged_entry")
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers)
        .layout_tests(false)
        .derive_default(true)
        .prepend_enum_name(false);
    for function in FUNCTIONS {
        builder = builder.allowlist_function(function);
    }
    let bindings = builder.generate().unwrap_or_else(|e| missing(&format!("bindgen cannot read the headers: {e}")));
    bindings.write_to_file(out.join("bindings.rs")).expect("OUT_DIR is writable");

    let mut wrap = cc::Build::new();
    wrap.file(wrappers.with_extension("c")).warnings(false);
    for dir in &includes {
        wrap.include(dir);
    }
    wrap.compile("grappe_fabric_inline");

    let Some(libs) = pkg_config(&["--libs", "libfabric"]) else {
        missing("`pkg-config --libs libfabric` failed");
    };
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={lib}");
        }
    }
}

/// Output of a successful pkg-config run, trimmed.
#[cfg(feature = "libfabric")]
fn pkg_config(args: &[&str]) -> Option<String> {
    let out = Command::new("pkg-config").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[cfg(feature = "libfabric")]
fn missing(why: &str) -> ! {
    eprintln!(
        "error: grappe-fabric-ofi's feature `libfabric` binds libfabric, which was not found ({why}).\n\
         On Debian/Ubuntu install it with: apt-get install libfabric-dev libclang-dev pkg-config\n\
         (scripts/install-deps does this), or point PKG_CONFIG_PATH at a libfabric >= {MINIMUM} installation;\n\
         or build without it (the feature is off by default)."
    );
    exit(1);
}
