//! The on-disk cache of NVRTC-compiled cubins: `<dir>/<key>.cubin`, where
//! the key is a SHA-256 over everything that decides the cubin (the source,
//! every NVRTC option in order, the NVRTC version and the architecture).
//!
//! The cache is an optimisation only: a file that cannot be read, or does
//! not look like a cubin, is a miss, and a failed write is ignored by the
//! caller. Files are written to a temporary name in the same folder and
//! renamed into place, so a concurrent run sees a whole file or none.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What every ELF file, and so every cubin, starts with.
const ELF_MAGIC: &[u8] = b"\x7fELF";

/// Changes when what a key covers (or how) changes, so old entries miss.
const KEY_FORMAT: &str = "msclc-cubin-1";

/// The cache key: hex SHA-256 over the format tag, the source, the options
/// (their count, then each), the NVRTC version and the architecture. Every
/// variable-length field is length-prefixed, so two different inputs can
/// never concatenate to the same bytes.
pub fn key(source: &str, options: &[String], version: (i32, i32), arch: &str) -> String {
    fn field(h: &mut Sha256, bytes: &[u8]) {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    let mut h = Sha256::new();
    field(&mut h, KEY_FORMAT.as_bytes());
    field(&mut h, source.as_bytes());
    h.update((options.len() as u64).to_le_bytes());
    for option in options {
        field(&mut h, option.as_bytes());
    }
    h.update(version.0.to_le_bytes());
    h.update(version.1.to_le_bytes());
    field(&mut h, arch.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the entry for `key` lives in `dir`.
pub fn path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.cubin"))
}

/// The cached cubin for `key`, if there is a readable one that looks like
/// a whole cubin ([`whole_elf`]); anything else is a miss, compiled again.
pub fn read(dir: &Path, key: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path(dir, key)).ok()?;
    whole_elf(&bytes).then_some(bytes)
}

/// Whether `bytes` are a 64-bit little-endian ELF file whose program and
/// section header tables lie within it: an entry cut short or overwritten
/// (a full disk, another program) is not handed to the driver as a cubin.
fn whole_elf(bytes: &[u8]) -> bool {
    const HEADER: usize = 64;
    if bytes.len() < HEADER || !bytes.starts_with(ELF_MAGIC) || bytes[4] != 2 || bytes[5] != 1 {
        return false;
    }
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let table_end = |offset: u64, entry: u64, count: u64| offset.checked_add(entry * count);
    let programs = table_end(u64_at(0x20), u16_at(0x36), u16_at(0x38));
    let sections = table_end(u64_at(0x28), u16_at(0x3a), u16_at(0x3c));
    let len = bytes.len() as u64;
    programs.is_some_and(|end| end <= len) && sections.is_some_and(|end| end <= len)
}

/// Stores `cubin` as the entry for `key`, creating `dir` if need be:
/// written to a temporary file in `dir`, then renamed into place. The old
/// entry is removed first, not written through: where it is a link, or
/// one of several names of a file, what it names is not the cache's
/// (`files::write` keeps a user's links and writes their files).
pub fn write(dir: &Path, key: &str, cubin: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let entry = path(dir, key);
    match std::fs::remove_file(&entry) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    crate::files::write(&entry, cubin)
}

/// The cache folder: `$MSCLC_CACHE_DIR`, else `$XDG_CACHE_HOME/msclc`,
/// else `$HOME/.cache/msclc`; None when none of them is set.
pub fn default_dir() -> Option<PathBuf> {
    dir_from(
        std::env::var_os("MSCLC_CACHE_DIR"),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// `default_dir` given the three variables' values. An empty value counts
/// as unset, and so does a relative `XDG_CACHE_HOME` (the XDG spec says to
/// ignore one).
pub fn dir_from(
    msclc_cache_dir: Option<OsString>,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let set = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set(msclc_cache_dir) {
        return Some(dir);
    }
    if let Some(xdg) = set(xdg_cache_home).filter(|p| p.is_absolute()) {
        return Some(xdg.join("msclc"));
    }
    set(home).map(|home| home.join(".cache").join("msclc"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn key_is_stable_and_hex() {
        let o = opts(&["--gpu-architecture=sm_90", "-std=c++17"]);
        let a = key("src", &o, (12, 9), "sm_90");
        assert_eq!(a, key("src", &o, (12, 9), "sm_90"));
        assert_eq!(a.len(), 64);
        assert!(a
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    }

    #[test]
    fn key_changes_with_every_input() {
        let o = opts(&[
            "--gpu-architecture=sm_90",
            "-std=c++17",
            "-DMSCL_DTYPE=mscl_f32",
        ]);
        let base = key("src", &o, (12, 9), "sm_90");
        let others = [
            key("src ", &o, (12, 9), "sm_90"),
            key("src", &o[..2], (12, 9), "sm_90"),
            key(
                "src",
                &opts(&[
                    "--gpu-architecture=sm_90",
                    "-std=c++17",
                    "-DMSCL_DTYPE=mscl_f16",
                ]),
                (12, 9),
                "sm_90",
            ),
            // Same options in another order.
            key(
                "src",
                &opts(&[
                    "-std=c++17",
                    "--gpu-architecture=sm_90",
                    "-DMSCL_DTYPE=mscl_f32",
                ]),
                (12, 9),
                "sm_90",
            ),
            key("src", &o, (12, 8), "sm_90"),
            key("src", &o, (13, 9), "sm_90"),
            key("src", &o, (12, 9), "sm_80"),
        ];
        for (i, other) in others.iter().enumerate() {
            assert_ne!(&base, other, "variant {i} collides");
        }
    }

    #[test]
    fn key_fields_do_not_run_together() {
        // Moving bytes across a field boundary changes the key.
        assert_ne!(
            key("ab", &opts(&["c"]), (1, 2), "x"),
            key("a", &opts(&["bc"]), (1, 2), "x")
        );
        assert_ne!(
            key("", &opts(&["a", "b"]), (1, 2), "x"),
            key("", &opts(&["ab"]), (1, 2), "x")
        );
        assert_ne!(
            key("", &opts(&["a", ""]), (1, 2), "x"),
            key("", &opts(&["a"]), (1, 2), "x")
        );
        assert_ne!(
            key("", &opts(&["a"]), (1, 2), "x"),
            key("", &opts(&[]), (1, 2), "ax")
        );
    }

    /// An ELF file of a header and one section header, as the cache keeps.
    fn small_elf() -> Vec<u8> {
        let mut elf = vec![0u8; 128];
        elf[..4].copy_from_slice(ELF_MAGIC);
        (elf[4], elf[5]) = (2, 1);
        elf[0x28..0x30].copy_from_slice(&64u64.to_le_bytes());
        elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3c..0x3e].copy_from_slice(&1u16.to_le_bytes());
        elf
    }

    #[test]
    fn default_dir_precedence() {
        let v = |s: &str| Some(OsString::from(s));
        assert_eq!(
            dir_from(v("/c"), v("/x"), v("/h")),
            Some(PathBuf::from("/c"))
        );
        assert_eq!(
            dir_from(None, v("/x"), v("/h")),
            Some(PathBuf::from("/x/msclc"))
        );
        assert_eq!(
            dir_from(None, None, v("/h")),
            Some(PathBuf::from("/h/.cache/msclc"))
        );
        assert_eq!(dir_from(None, None, None), None);
        // Empty counts as unset; a relative XDG_CACHE_HOME is ignored.
        assert_eq!(
            dir_from(v(""), v(""), v("/h")),
            Some(PathBuf::from("/h/.cache/msclc"))
        );
        assert_eq!(
            dir_from(None, v("rel"), v("/h")),
            Some(PathBuf::from("/h/.cache/msclc"))
        );
        assert_eq!(dir_from(v(""), None, v("")), None);
        // MSCLC_CACHE_DIR may be relative: the user named it outright.
        assert_eq!(
            dir_from(v("cache"), v("/x"), None),
            Some(PathBuf::from("cache"))
        );
    }

    #[test]
    fn entries_round_trip_and_bad_ones_miss() {
        let dir = std::env::temp_dir().join(format!(
            "msclc-cache-unit-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let k = key("s", &[], (1, 0), "sm_90");
        assert_eq!(read(&dir, &k), None, "missing folder is a miss");
        let cubin = small_elf();
        write(&dir, &k, &cubin).unwrap();
        assert_eq!(read(&dir, &k), Some(cubin.clone()));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from(format!("{k}.cubin"))]);
        std::fs::write(path(&dir, &k), b"").unwrap();
        assert_eq!(read(&dir, &k), None, "empty file is a miss");
        std::fs::write(path(&dir, &k), b"garbage").unwrap();
        assert_eq!(read(&dir, &k), None, "non-ELF file is a miss");
        std::fs::write(path(&dir, &k), &cubin[..100]).unwrap();
        assert_eq!(read(&dir, &k), None, "a cubin cut short is a miss");
        let mut overwritten = cubin.clone();
        overwritten[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        std::fs::write(path(&dir, &k), overwritten).unwrap();
        assert_eq!(
            read(&dir, &k),
            None,
            "the magic and then anything is a miss"
        );
        // An entry that is a link, or another name of a file, is replaced
        // as an entry: the file it names is left as it was.
        #[cfg(unix)]
        {
            let notes = dir.join("notes.txt");
            std::fs::write(&notes, "my notes").unwrap();
            std::fs::remove_file(path(&dir, &k)).unwrap();
            std::os::unix::fs::symlink(&notes, path(&dir, &k)).unwrap();
            write(&dir, &k, &cubin).unwrap();
            assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");
            assert_eq!(read(&dir, &k), Some(cubin.clone()));
            std::fs::remove_file(path(&dir, &k)).unwrap();
            std::fs::hard_link(&notes, path(&dir, &k)).unwrap();
            write(&dir, &k, &cubin).unwrap();
            assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes");
            assert_eq!(read(&dir, &k), Some(cubin));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
