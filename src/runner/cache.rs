//! The on-disk cache of NVRTC-compiled cubins: `<dir>/<key>.cubin`, where
//! the key is a SHA-256 over everything that decides the cubin (the source,
//! every NVRTC option in order, the NVRTC version and the architecture).
//!
//! An entry is the cubin followed by the SHA-256 of the cubin: an entry
//! cut short, overwritten or with a byte changed (a full disk, another
//! program, a failing disk) no longer matches its digest, and is never
//! handed to the driver, which could load a damaged kernel and run it.
//!
//! The cache is an optimisation only: a file that cannot be read, or whose
//! digest does not match, is a miss, and a failed write is ignored by the
//! caller. Files are written to a temporary name in the same folder and
//! renamed into place, so a concurrent run sees a whole file or none.

use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Changes when what a key covers (or how), or the entry's layout,
/// changes, so old entries miss. 2: the digest after the cubin.
const KEY_FORMAT: &str = "msclc-cubin-2";

/// The length of the SHA-256 digest after an entry's cubin.
const DIGEST_LEN: usize = 32;

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

/// The cached cubin for `key`, if there is a readable entry whose cubin
/// matches the digest after it; anything else is a miss, compiled again.
pub fn read(dir: &Path, key: &str) -> Option<Vec<u8>> {
    let mut entry = std::fs::read(path(dir, key)).ok()?;
    let cubin_len = entry.len().checked_sub(DIGEST_LEN)?;
    if Sha256::digest(&entry[..cubin_len]).as_slice() != &entry[cubin_len..] {
        return None;
    }
    entry.truncate(cubin_len);
    Some(entry)
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
    let mut bytes = Vec::with_capacity(cubin.len() + DIGEST_LEN);
    bytes.extend_from_slice(cubin);
    bytes.extend_from_slice(&Sha256::digest(cubin));
    crate::files::write(&entry, &bytes)
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
        let cubin = b"\x7fELF and the rest of a kernel".to_vec();
        write(&dir, &k, &cubin).unwrap();
        assert_eq!(read(&dir, &k), Some(cubin.clone()));
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from(format!("{k}.cubin"))]);
        let entry = std::fs::read(path(&dir, &k)).unwrap();
        assert_eq!(entry.len(), cubin.len() + DIGEST_LEN);
        let damaged = |bytes: &[u8], what: &str| {
            std::fs::write(path(&dir, &k), bytes).unwrap();
            assert_eq!(read(&dir, &k), None, "{what} is a miss");
        };
        damaged(b"", "an empty file");
        damaged(&entry[..DIGEST_LEN - 1], "a file shorter than a digest");
        damaged(&entry[..entry.len() - 1], "an entry cut short");
        damaged(&cubin, "a cubin without its digest");
        let mut flipped = entry.clone();
        flipped[5] ^= 1;
        damaged(&flipped, "a cubin with one bit changed");
        let mut grown = entry.clone();
        grown.push(0);
        damaged(&grown, "an entry with a byte more");
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
