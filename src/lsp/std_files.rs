//! The standard library's modules as files an editor can open. They are
//! built into msclc, so a definition in one (`all_pairs_barrier`) has no
//! file of its own to go to; go to definition writes the module, once,
//! under the user's cache folder, `$XDG_CACHE_HOME/msclc/VERSION/std/`
//! (else `~/.cache/...`), and goes there. The file is made read-only: it
//! is there to read, and an edit would change nothing msclc imports.

use std::path::{Path, PathBuf};

/// The file holding standard module `name` (`std/sync`) as this msclc has
/// it, written where it is not there or differs (another build of msclc
/// of the same version); `None` where no cache folder can be found or
/// written, and go to definition finds nothing, as before there was one.
pub(super) fn std_file(name: &str) -> Option<PathBuf> {
    let text = crate::vocab::stdlib::text(name)?;
    let module = name.strip_prefix("std/")?;
    let folder = cache_home()?
        .join("msclc")
        .join(env!("CARGO_PKG_VERSION"))
        .join("std");
    let path = folder.join(format!("{module}.mscl"));
    if std::fs::read(&path).is_ok_and(|on_disk| on_disk == text.as_bytes()) {
        return Some(path);
    }
    std::fs::create_dir_all(&folder).ok()?;
    crate::files::write(&path, text.as_bytes()).ok()?;
    read_only(&path);
    Some(path)
}

/// `$XDG_CACHE_HOME` where it is an absolute path (the XDG base directory
/// specification ignores a relative one), else `~/.cache`.
fn cache_home() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from);
    match xdg.filter(|p| p.is_absolute()) {
        Some(dir) => Some(dir),
        None => std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute())
            .map(|home| home.join(".cache")),
    }
}

/// Takes the write permissions off `path`; where it cannot, the file is
/// writable, and nothing else changes.
fn read_only(path: &Path) {
    if let Ok(meta) = std::fs::metadata(path) {
        let mut permissions = meta.permissions();
        permissions.set_readonly(true);
        let _ = std::fs::set_permissions(path, permissions);
    }
}
