//! Call sites in machine code: the return address of a call into grappe's
//! MPI library from a C, C++ or Fortran program (or from Python through
//! mpi4py). The recorder writes it as `MODULE+0xOFFSET`, the module's
//! file and the address in that file (its offset from where the module
//! was loaded, the address its debug information uses), which costs one
//! `dladdr` per distinct address; the trace tools turn it into the
//! caller's `file:line` from the module's debug information when it has
//! some, and leave it as it is when it has none.

use std::cell::RefCell;
use std::ffi::CStr;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

/// The text of the site at return address `address` in this process.
pub fn text_of(address: usize) -> String {
    match module_of(address) {
        Some((module, offset)) => format!("{}+{offset:#x}", module.display()),
        None => format!("{address:#x}"),
    }
}

/// The file of the module holding `address` and the address's offset in
/// it (from the module's load bias, so that it is the address the file's
/// own headers and debug information use).
fn module_of(address: usize) -> Option<(PathBuf, usize)> {
    // SAFETY: `Dl_info` is pointers and integers, for which zero is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let mut map: *mut libc::c_void = std::ptr::null_mut();
    // SAFETY: `dladdr1` only reads the address (it need not be valid) and
    // writes `info` and, with RTLD_DL_LINKMAP, a pointer to the module's
    // `struct link_map`, whose first field is the load bias (`l_addr`).
    let found = unsafe { libc::dladdr1(address as *const libc::c_void, &mut info, &mut map, RTLD_DL_LINKMAP) };
    if found == 0 || map.is_null() {
        return None;
    }
    // SAFETY: as above: `map` points to the module's live link map.
    let bias = unsafe { *(map as *const usize) };
    let name = if info.dli_fname.is_null() {
        ""
    } else {
        // SAFETY: a NUL-terminated name owned by the dynamic loader.
        unsafe { CStr::from_ptr(info.dli_fname) }.to_str().unwrap_or("")
    };
    // The main program's name is the one it was started with (relative,
    // or a bare command name): its file is /proc/self/exe.
    let module = match name {
        name if name.starts_with('/') => PathBuf::from(name),
        _ => std::env::current_exe().ok()?,
    };
    Some((module, address.wrapping_sub(bias)))
}

/// `dladdr1`'s request for the module's link map (`<dlfcn.h>`).
const RTLD_DL_LINKMAP: libc::c_int = 2;

/// A site text of the form [`text_of`] writes: the module and the offset.
pub fn parse(text: &str) -> Option<(&Path, u64)> {
    let (module, offset) = text.rsplit_once('+')?;
    let offset = u64::from_str_radix(offset.strip_prefix("0x")?, 16).ok()?;
    module.starts_with('/').then(|| (Path::new(module), offset))
}

thread_local! {
    /// The modules read so far (`None`: unreadable), and the texts resolved.
    static RESOLVER: RefCell<Resolver> = RefCell::new(Resolver::default());
}

#[derive(Default)]
struct Resolver {
    modules: FxHashMap<PathBuf, Option<addr2line::Loader>>,
    resolved: FxHashMap<String, Option<String>>,
}

/// The caller's `file:line` (and `:column` when known) for a site text
/// that [`text_of`] wrote, from the module's debug information; `None`
/// for another text, or when the module is gone or has no line for it.
pub fn resolve(text: &str) -> Option<String> {
    let (module, offset) = parse(text)?;
    RESOLVER.with(|resolver| {
        let mut resolver = resolver.borrow_mut();
        if let Some(known) = resolver.resolved.get(text) {
            return known.clone();
        }
        let loader = resolver.modules.entry(module.to_owned()).or_insert_with(|| open(module));
        // The return address follows the call: its line is the one of the
        // instruction before.
        let line = loader.as_ref().and_then(|loader| line_of(loader, offset.saturating_sub(1)));
        resolver.resolved.insert(text.to_owned(), line.clone());
        line
    })
}

/// The module's debug information, if it is a regular file that parses:
/// a trace is outside input, and a path in it could name a FIFO or a
/// device, whose opening would block or read forever.
fn open(module: &Path) -> Option<addr2line::Loader> {
    let is_file = std::fs::metadata(module).is_ok_and(|m| m.is_file());
    is_file.then(|| addr2line::Loader::new(module).ok()).flatten()
}

fn line_of(loader: &addr2line::Loader, address: u64) -> Option<String> {
    let location = loader.find_location(address).ok()??;
    let (file, line) = (location.file?, location.line?);
    Some(match location.column {
        Some(column) if column > 0 => format!("{file}:{line}:{column}"),
        _ => format!("{file}:{line}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn here() -> usize {
        here as fn() -> usize as usize
    }

    #[test]
    fn an_address_of_this_program_is_written_as_its_file_and_offset() {
        let text = text_of(here());
        let (module, offset) = parse(&text).unwrap_or_else(|| panic!("{text} does not parse"));
        assert_eq!(module, std::env::current_exe().unwrap());
        assert!(offset > 0 && (offset as usize) < here(), "{text}");
    }

    #[test]
    fn a_site_resolves_to_this_file_from_the_test_s_debug_information() {
        // An address inside `here`, past its first instruction.
        let text = text_of(here() + 2);
        let line = resolve(&text).unwrap_or_else(|| panic!("{text} did not resolve"));
        assert!(line.contains("code_site.rs:"), "{text} resolved to {line}");
    }

    #[test]
    fn other_texts_are_not_code_sites() {
        assert_eq!(parse("src/main.rs:10:5"), None);
        assert_eq!(parse("relative/a.out+0x10"), None);
        assert_eq!(parse("/bin/true+10"), None);
        assert_eq!(parse("/bin/true+0x1f"), Some((Path::new("/bin/true"), 0x1f)));
        assert_eq!(resolve("src/main.rs:10:5"), None);
        assert_eq!(resolve("/nonexistent/module+0x10"), None);
        // A device is not read (a FIFO would block the reader).
        assert_eq!(resolve("/dev/zero+0x10"), None);
    }
}
