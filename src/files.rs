//! Reading a user's text files, and writing a user's files so that nothing
//! they own is lost.
//!
//! Reading: text that is not UTF-8 is refused with the place of the first
//! byte that is not (`byte 1041, line 12, column 7`).
//!
//! Writing: every file
//! msclc writes (a plan, CUDA source, a formatted program, installed
//! plans, traces and pictures, cached cubins) goes to a temporary file in
//! the same folder, is synced (but for a plan, which msclc can make
//! again), and then takes its name. A kill, a full disk or a file-size
//! limit at any moment leaves the old file or the new one, never a
//! fragment. A symbolic link is written through: the file
//! it names gets the new contents, the link stays a link. A file of
//! several names (hard links) is copied into from the whole temporary
//! file, so that every name has the new text. A device, a pipe
//! or a socket (`-o /dev/null`, `-o /dev/stdout`) is written into as it
//! is: it keeps no contents to lose, and a file renamed over it would take
//! its place.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The text `input` holds, at most `most` bytes of it (more is an error
/// that says so); not UTF-8 is an error that says where.
pub fn read_text(input: impl std::io::Read, most: Option<u64>) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    match most {
        Some(most) => {
            input.take(most + 1).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > most {
                return Err(std::io::Error::other(format!(
                    "it is too large: more than {most} bytes (the maximum)"
                )));
            }
        }
        None => {
            let mut input = input;
            input.read_to_end(&mut bytes)?;
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line = before.iter().filter(|b| **b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        // Columns count characters, as diagnostics do.
        let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it is not UTF-8: byte {at} (line {line}, column {column}) starts no UTF-8 character"),
        )
    })
}

/// Whether the file at `path` holds a JSON object with each of `keys` at
/// its top level: how msclc tells a file it wrote (a plan, tune's index)
/// from a user's of the same name. Read as it streams by, never held
/// whole: a plan may be gigabytes.
pub fn holds_json_keys(path: &Path, keys: &[&str]) -> bool {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys<'k>(&'k [&'k str]);
    impl<'de> Visitor<'de> for Keys<'_> {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<bool, M::Error> {
            let mut found = 0u64;
            while let Some(key) = map.next_key::<String>()? {
                if let Some(k) = self.0.iter().position(|&wanted| wanted == key) {
                    found |= 1 << k;
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(found.count_ones() as usize == self.0.len())
        }
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut json = serde_json::Deserializer::from_reader(std::io::BufReader::new(file));
    json.deserialize_map(Keys(keys)).unwrap_or(false)
}

/// Writes `contents` to `path`, whole or not at all.
pub fn write(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    write_with(path, |out| out.write_all(contents))
}

/// Writes what `fill` writes to `path`, whole or not at all: `fill` writes
/// into a temporary file beside it, which then takes its name once it is
/// on the disk (a crash of the machine leaves the old file or the new one).
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    replace(path, fill, true)
}

/// `write_with` for a file msclc can make again (a compiled plan): whole or
/// not at all for any reader, without waiting for the disk, which takes
/// longer than compiling a small plan.
pub fn write_output_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    replace(path, fill, false)
}

fn replace(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    durable: bool,
) -> std::io::Result<()> {
    let target = through_links(path);
    let old = std::fs::metadata(&target).ok();
    if old.as_ref().is_some_and(|m| !m.is_file() && !m.is_dir()) {
        let file = std::fs::OpenOptions::new().write(true).open(&target)?;
        let mut out = BufWriter::new(file);
        fill(&mut out)?;
        return out.flush();
    }
    // A file its user may not write is not replaced by one they may (a
    // rename asks only the folder's leave): refused, as writing into it is.
    may_replace(&target)?;
    let temp = temporary_beside(&target)?;
    let mut slot = note_pending(&temp);
    // Once a file of several names is being written in place, the
    // temporary file is the one whole copy of the new text: kept.
    let mut whole_copy_kept = false;
    let result = (|| {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| in_folder_of(&target, e))?;
        // A file that existed keeps its owner, where msclc may give it
        // (run as root, or the group one of the user's), and its
        // permissions (a script stays executable, a private file private;
        // set after, as a change of owner clears set-id bits).
        if let Some(old) = &old {
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
            }
            file.set_permissions(old.permissions())?;
        }
        let mut out = BufWriter::new(file);
        fill(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        // On disk before it has the name: a crash leaves no torn file.
        if durable {
            file.sync_all()?;
        }
        if old.as_ref().is_some_and(hard_linked) {
            // A file of several names (hard links) keeps them all: the new
            // text is copied into it from the whole temporary file, which
            // a copy stopped part way (a full disk, a crash, a signal:
            // it is no longer one to remove) leaves beside it, and names.
            if let Some(slot) = slot.take() {
                PENDING[slot].store(std::ptr::null_mut(), Ordering::Release);
            }
            whole_copy_kept = true;
            return match std::fs::copy(&temp, &target) {
                Ok(_) => {
                    whole_copy_kept = false;
                    std::fs::remove_file(&temp)
                }
                Err(e) => Err(std::io::Error::new(
                    e.kind(),
                    format!(
                        "{e}; it has other names (hard links), so it is written in place, and is left cut short: the whole new text is in {}",
                        temp.display()
                    ),
                )),
            };
        }
        put_in_place(&temp, &target, old.is_some_and(|m| m.is_file()))
    })();
    if result.is_err() && !whole_copy_kept {
        let _ = std::fs::remove_file(&temp);
    }
    if let Some(slot) = slot {
        PENDING[slot].store(std::ptr::null_mut(), Ordering::Release);
    }
    result
}

/// `e`, met making a file beside `target`, said of the folder where that
/// is what refuses: the file itself may be one its user can write, but
/// replacing it whole makes another there.
fn in_folder_of(target: &Path, e: std::io::Error) -> std::io::Error {
    let kind = e.kind();
    if !matches!(
        kind,
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
    ) {
        return e;
    }
    let folder = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let why = if kind == std::io::ErrorKind::NotFound && !folder.is_dir() {
        format!("there is no folder {}", folder.display())
    } else if kind == std::io::ErrorKind::NotFound {
        // A folder of the system's that makes no files (`/proc`).
        format!("the folder {} takes no new files ({e})", folder.display())
    } else {
        format!(
            "the folder {} is not writable ({e}): msclc writes a file whole beside the old one, and then gives it the name",
            folder.display()
        )
    };
    std::io::Error::new(kind, why)
}

/// Whether a file has more names than one: a rename over one of them
/// would leave the others with the old text.
fn hard_linked(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.is_file() && meta.nlink() > 1
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

/// Gives the file `temp` the name `target` in one step for any reader
/// (`replacing` a regular file there). On Linux a file is exchanged with
/// the one it replaces, which is then removed under the temporary name:
/// ext4 starts writing a file renamed over another out to the disk before
/// the rename returns (its `auto_da_alloc`, for programs that never sync),
/// 17 ms for a plan of 39 MB, half as long as compiling it. An exchange is
/// no rename over, and the plan is written back as any write is. (A kill
/// between the exchange and the removal leaves the old file beside the
/// new one, under the hidden temporary name.)
fn put_in_place(temp: &Path, target: &Path, replacing: bool) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    if replacing && exchange(temp, target).is_ok() {
        // The old file, under the temporary name now.
        if std::fs::remove_file(temp).is_ok() {
            return Ok(());
        }
        // What had the name is no file any more (a folder made there
        // since): it gets its name back, and the rename says why not.
        // (Should that exchange fail too, the folder stays under the
        // temporary name, and the error says the plan was not written.)
        exchange(temp, target)?;
    }
    #[cfg(not(target_os = "linux"))]
    let _ = replacing;
    std::fs::rename(temp, target)
}

/// Swaps the names `a` and `b` of two existing files, at once
/// (`renameat2` with `RENAME_EXCHANGE`); an error where the file system
/// or the kernel (before 3.15) cannot. Called as a system call, not
/// through the C library, which has a `renameat2` only from glibc 2.28.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let a = CString::new(a.as_os_str().as_bytes())?;
    let b = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: renameat2's five arguments, the paths NUL-terminated and
    // alive across the call.
    let done = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    match done {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// The file `path` names after following symbolic links (itself when it is
/// none, or names nothing yet).
fn through_links(path: &Path) -> PathBuf {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        if let Ok(real) = std::fs::canonicalize(path) {
            return real;
        }
    }
    path.to_path_buf()
}

/// The temporary files being written (their paths, NUL-terminated), for
/// [`remove_temporaries_on_signals`] to remove: a slot each, a few at a
/// time (the shards write none). A path put in a slot is never freed (a
/// few bytes a file written), so that a signal that reads a slot as the
/// writer clears it still reads a path.
const PENDING_SLOTS: usize = 16;
static PENDING: [std::sync::atomic::AtomicPtr<std::ffi::c_char>; PENDING_SLOTS] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; PENDING_SLOTS];

/// Notes `temp` as being written; its slot (none when all are taken).
#[cfg(unix)]
fn note_pending(temp: &Path) -> Option<usize> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(temp.as_os_str().as_bytes()).ok()?;
    let path = path.into_raw();
    let slot = PENDING.iter().position(|s| {
        s.compare_exchange(
            std::ptr::null_mut(),
            path,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_ok()
    });
    if slot.is_none() {
        // SAFETY: made by `into_raw` just above, and in no slot.
        drop(unsafe { std::ffi::CString::from_raw(path) });
    }
    slot
}

#[cfg(not(unix))]
fn note_pending(_temp: &Path) -> Option<usize> {
    None
}

/// Makes SIGINT, SIGTERM and SIGHUP (Ctrl-C, a kill, a closed terminal)
/// remove the temporary files being written before the process ends as
/// the signal ends it: a plan of gigabytes stopped while it is written
/// leaves no hidden copy of itself (the old file stays, whole).
#[cfg(unix)]
pub fn remove_temporaries_on_signals() {
    extern "C" fn remove_and_end(signal: libc::c_int) {
        for slot in &PENDING {
            let path = slot.load(Ordering::Acquire);
            if !path.is_null() {
                // SAFETY: unlink, signal and raise are async-signal-safe;
                // `path` is a NUL-terminated path never freed.
                unsafe { libc::unlink(path) };
            }
        }
        // SAFETY: the default action, taken again, ends the process.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sets a handler that only calls async-signal-safe functions.
        unsafe { libc::signal(signal, remove_and_end as *const () as libc::sighandler_t) };
    }
}

/// A fresh name in `target`'s folder: hidden, and unique per process and
/// call, so concurrent writers never share one.
fn temporary_beside(target: &Path) -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path names no file (it ends in `..` or is a root)",
        )
    })?;
    let temp = format!(
        ".{}.msclc-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    Ok(target.with_file_name(temp))
}

/// Whether `path`, where it is a file already, is one its user may write
/// (asked by opening it to write, writing nothing): an error says why not.
/// Anything else passes (nothing there yet; a pipe or a device, which
/// opening would wait on).
pub fn may_replace(path: &Path) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        std::fs::OpenOptions::new().write(true).open(path)?;
    }
    Ok(())
}

/// Whether `path` is a temporary file `temporary_beside` made for a
/// msclc that is no longer running (killed while it wrote): msclc's to
/// remove. A process of that number that runs now may be writing it.
pub fn stale_temporary(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let Some((_, numbers)) = rest.rsplit_once(".msclc-") else {
        return false;
    };
    let Some((pid, count)) = numbers.split_once('-') else {
        return false;
    };
    let (Ok(pid), Ok(_)) = (pid.parse::<u32>(), count.parse::<u64>()) else {
        return false;
    };
    !running(pid)
}

/// Whether a process numbered `pid` runs (as far as this one can tell).
fn running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 sends nothing; it asks whether `pid` exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        alive || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Whether `a` and `b` name one existing file (through links, or as two
/// hard links).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(x), Ok(y)) => {
            use std::os::unix::fs::MetadataExt;
            x.dev() == y.dev() && x.ino() == y.ino()
        }
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok(),
        _ => false,
    }
}

/// `path` with its `.` and `..` resolved by its components alone (an
/// import `"../lib.mscl"` from `sub/` is `lib.mscl`), as the editor names
/// the file.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary file of a msclc that has ended is stale; one of this
    /// process, or a name of another pattern, is not.
    #[cfg(unix)]
    #[test]
    fn a_temporary_of_an_ended_msclc_is_stale() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let ended = child.id();
        child.wait().unwrap();
        let temp = |pid: u32| PathBuf::from(format!("dir/.plan.json.msclc-{pid}-3.tmp"));
        assert!(stale_temporary(&temp(ended)));
        assert!(!stale_temporary(&temp(std::process::id())));
        for other in [
            ".plan.json.tmp",
            "plan.json.msclc-1-2.tmp",
            ".x.msclc-a-1.tmp",
            ".x.msclc-1.tmp",
        ] {
            assert!(!stale_temporary(Path::new(other)), "{other}");
        }
    }

    /// `.` and `..` are resolved by the components alone, as an editor
    /// names a file that a program imports as `../lib.mscl`.
    #[test]
    fn paths_are_resolved_lexically() {
        assert_eq!(
            lexical(Path::new("/a/sub/../lib.mscl")),
            Path::new("/a/lib.mscl")
        );
        assert_eq!(lexical(Path::new("/a/./b/./c")), Path::new("/a/b/c"));
        assert_eq!(lexical(Path::new("../x")), Path::new("../x"));
    }

    fn scratch(what: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("msclc-files-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn text_that_is_not_utf8_is_refused_where_it_is_not() {
        let err = read_text(&b"ab\ncd\xffe"[..], None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "it is not UTF-8: byte 5 (line 2, column 3) starts no UTF-8 character"
        );
        assert_eq!(
            read_text(&b"caf\xc3\xa9"[..], Some(5)).unwrap(),
            "caf\u{e9}"
        );
        let big = read_text(&b"123456"[..], Some(5)).unwrap_err();
        assert!(big.to_string().contains("more than 5 bytes"), "{big}");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let dir = scratch("failed");
        let path = dir.join("plan.json");
        std::fs::write(&path, "old").unwrap();
        let err = write_with(&path, |out| {
            out.write_all(b"half of the new")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(err.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        write(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file at `path` holding "old", with permissions `mode`.
    #[cfg(unix)]
    fn old_file(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, "old").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The permissions of the file at `path`.
    #[cfg(unix)]
    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn a_plan_written_over_a_file_replaces_it_and_leaves_nothing_else() {
        let dir = scratch("over");
        let path = dir.join("plan.json");
        old_file(&path, 0o600);
        // A reader of the old file goes on reading the old contents, as a
        // rename over it leaves them (it is not written into).
        let mut reader = std::fs::File::open(&path).unwrap();
        write_output_with(&path, |out| out.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mut before = String::new();
        std::io::Read::read_to_string(&mut reader, &mut before).unwrap();
        assert_eq!(before, "old");
        assert_eq!(mode_of(&path), 0o600);
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["plan.json"]);
        // A folder is not a file to write over: refused, and left as it was.
        std::fs::create_dir(dir.join("sub")).unwrap();
        assert!(write_output_with(&dir.join("sub"), |out| out.write_all(b"x")).is_err());
        assert!(dir.join("sub").is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_link_is_written_through_and_stays_a_link() {
        let dir = scratch("link");
        let real = dir.join("real.mscl");
        old_file(&real, 0o640);
        let link = dir.join("link.mscl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(mode_of(&real), 0o640);
        assert!(same_file(&link, &real));
        assert!(!same_file(&link, &dir.join("other")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
