//! With feature `otf2`: links the OTF2 library found by pkg-config, and
//! refuses to build without it, or with a version whose API differs from
//! the declarations in `src/otf2/ffi.rs` (3.0 added arguments to two
//! definition writers). Without the feature: nothing, the library is not
//! needed.
//!
//! pkg-config is run directly rather than through the `pkg-config` crate:
//! two invocations do not justify a build dependency.

use std::process::{Command, exit};

const MINIMUM: &str = "3.0";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_OTF2").is_none() {
        return;
    }
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");

    if Command::new("pkg-config").arg("--version").output().is_err() {
        missing("pkg-config is not installed");
    }
    let Some(version) = pkg_config(&["--modversion", "otf2"]) else {
        missing("pkg-config does not know the otf2 package");
    };
    if pkg_config(&["--atleast-version", MINIMUM, "otf2"]).is_none() {
        missing(&format!("OTF2 {version} is installed, grappe-export needs {MINIMUM} or later"));
    }
    let Some(libs) = pkg_config(&["--libs", "otf2"]) else {
        missing("`pkg-config --libs otf2` failed");
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
fn pkg_config(args: &[&str]) -> Option<String> {
    let out = Command::new("pkg-config").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn missing(why: &str) -> ! {
    eprintln!(
        "error: grappe-export writes OTF2 through the OTF2 library, which was not found ({why}).\n\
         On Debian/Ubuntu install it with: apt-get install libopen-trace-format2-dev pkg-config\n\
         (scripts/install-deps does this), or point PKG_CONFIG_PATH at an OTF2 >= {MINIMUM} installation;\n\
         or build without OTF2 exports: cargo build -p grappe-cli --no-default-features."
    );
    exit(1);
}
