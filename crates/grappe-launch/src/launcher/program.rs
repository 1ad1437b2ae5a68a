//! Finding the program before any process starts, so that a typo gives one clear error instead
//! of N failed children.

use super::LaunchError;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The path to execute for `program`: as given when it contains a `/`, else the first
/// executable file of that name in `PATH` (as `execvp` would find it).
pub(super) fn resolve(program: &Path) -> Result<PathBuf, LaunchError> {
    resolve_in(program, std::env::var_os("PATH"))
}

/// As [`resolve`], searching `path` (a `PATH` value) rather than this process's own.
pub(crate) fn resolve_in(program: &Path, path: Option<std::ffi::OsString>) -> Result<PathBuf, LaunchError> {
    let not_found = |searched_path| LaunchError::ProgramNotFound { program: program.to_path_buf(), searched_path };
    if program.as_os_str().is_empty() {
        return Err(not_found(false));
    }
    if program.components().count() > 1 || program.is_absolute() {
        check_executable(program)?;
        return Ok(program.to_path_buf());
    }
    let path = path.unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| check_executable(candidate).is_ok())
        .ok_or_else(|| not_found(true))
}

fn check_executable(path: &Path) -> Result<(), LaunchError> {
    let not_executable =
        |reason: &str| LaunchError::NotExecutable { path: path.to_path_buf(), reason: reason.to_owned() };
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(LaunchError::ProgramNotFound { program: path.to_path_buf(), searched_path: false });
        }
        Err(e) => return Err(not_executable(&e.to_string())),
    };
    if metadata.is_dir() {
        return Err(not_executable("it is a directory"));
    }
    if metadata.permissions().mode() & 0o111 == 0 {
        return Err(not_executable("it has no execute permission"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_in_path_or_refused_with_the_path() {
        let sh = resolve(Path::new("sh")).unwrap();
        assert!(sh.is_absolute(), "{}", sh.display());

        let err = resolve(Path::new("grappe-no-such-program")).unwrap_err();
        assert!(err.to_string().contains("grappe-no-such-program"), "{err}");
        assert!(err.to_string().contains("PATH"), "{err}");
        assert_eq!(err.exit_code(), 127);

        let err = resolve(Path::new("/nonexistent/prog")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/prog"), "{err}");

        let err = resolve(Path::new("/tmp")).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        assert_eq!(err.exit_code(), 126);

        assert!(resolve(Path::new("")).is_err());
    }

    #[test]
    fn files_without_execute_permission_are_refused() {
        let dir = std::env::temp_dir().join(format!("grappe-program-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("not-executable");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let err = resolve(&file).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.to_string().contains("no execute permission"), "{err}");
    }
}
