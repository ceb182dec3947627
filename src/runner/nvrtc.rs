//! Compiling generated CUDA source to a CUBIN with NVRTC, loaded at run
//! time; compiled cubins are kept in an on-disk cache (`super::cache`).
//!
//! NVRTC 12 or 13, wherever it is: `MSCLC_NVRTC` (a library's path), the
//! loader's path, a toolkit (`CUDA_HOME`, `CUDA_PATH`, /usr/local/cuda,
//! /usr/local/cuda-13.x and -12.x, newest first) or a wheel from PyPI in
//! Python's paths (`nvidia-cuda-nvrtc` 13.x puts it in nvidia/cu13/lib,
//! `nvidia-cuda-nvrtc-cu12` in nvidia/cuda_nvrtc/lib). Its C API is the
//! same in both; it is bound here by the library's full path (cudarc binds
//! NVRTC by name only, so a CUDA 13 library outside the loader's path
//! could not be used through it).

use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The NVRTC majors whose API this binds.
const MAJORS: [i32; 2] = [13, 12];

type Handle = *mut c_void;

/// NVRTC's functions, from one library that stays loaded.
struct Api {
    path: PathBuf,
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    create: unsafe extern "C" fn(
        *mut Handle,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(Handle, c_int, *const *const c_char) -> c_int,
    log_size: unsafe extern "C" fn(Handle, *mut usize) -> c_int,
    log: unsafe extern "C" fn(Handle, *mut c_char) -> c_int,
    cubin_size: unsafe extern "C" fn(Handle, *mut usize) -> c_int,
    cubin: unsafe extern "C" fn(Handle, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut Handle) -> c_int,
}

// SAFETY: NVRTC's functions may be called from any thread; the struct
// holds only function pointers and a path.
unsafe impl Send for Api {}
unsafe impl Sync for Api {}

/// How the loader's refusal of a library starts: `find` tells a library
/// the loader could not open from one it opened that will not do.
const NOT_LOADED: &str = "cannot load NVRTC from ";

impl Api {
    /// Binds the NVRTC at `path` (a full path, or a name the loader finds).
    fn open(path: &Path) -> Result<Api, String> {
        preload_builtins(path);
        // SAFETY: loading NVRTC runs its initialisers only.
        let lib = unsafe { Library::new(path) }
            .map_err(|e| format!("{NOT_LOADED}{}: {}", path.display(), loader_said(&e)))?;
        macro_rules! bind {
            ($name:literal) => {
                // SAFETY: the symbol is NVRTC's, with the signature of the
                // field it is stored in (nvrtc.h, the same in 12 and 13).
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{} is not NVRTC: {}", path.display(), loader_said(&e)))?
            };
        }
        let api = Api {
            path: path.to_path_buf(),
            version: bind!("nvrtcVersion"),
            error_string: bind!("nvrtcGetErrorString"),
            create: bind!("nvrtcCreateProgram"),
            compile: bind!("nvrtcCompileProgram"),
            log_size: bind!("nvrtcGetProgramLogSize"),
            log: bind!("nvrtcGetProgramLog"),
            cubin_size: bind!("nvrtcGetCUBINSize"),
            cubin: bind!("nvrtcGetCUBIN"),
            destroy: bind!("nvrtcDestroyProgram"),
        };
        // The functions stay valid as long as the library: for good.
        std::mem::forget(lib);
        let (major, minor) = api.version()?;
        if !MAJORS.contains(&major) {
            return Err(format!(
                "{} is NVRTC {major}.{minor}; msclc uses NVRTC 12 or 13",
                path.display()
            ));
        }
        Ok(api)
    }

    fn version(&self) -> Result<(i32, i32), String> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: writes two ints through valid pointers.
        self.check(
            unsafe { (self.version)(&mut major, &mut minor) },
            "cannot read NVRTC's version",
        )?;
        Ok((major, minor))
    }

    /// `status` as a result, NVRTC's words for it after `what`.
    fn check(&self, status: c_int, what: &str) -> Result<(), String> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: NVRTC returns a static string for every status.
        let words = unsafe { CStr::from_ptr((self.error_string)(status)) };
        Err(format!("{what}: {}", words.to_string_lossy()))
    }
}

/// Loads the `libnvrtc-builtins.so.*` beside the NVRTC at `path`, where
/// there is one, so that NVRTC finds it by its name when it compiles:
/// NVRTC opens it by name only, and NVRTC 13.0's library does not look in
/// its own folder ("failed to open libnvrtc-builtins.so.13.0").
fn preload_builtins(path: &Path) {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("libnvrtc-builtins.so.") {
            // SAFETY: runs the builtins library's initialisers only; it
            // stays loaded, for NVRTC to find.
            if let Ok(lib) = unsafe { Library::open(Some(entry.path()), RTLD_NOW | RTLD_GLOBAL) } {
                std::mem::forget(lib);
            }
        }
    }
}

/// What the loader said of `e`: libloading's own words ("dlopen failed")
/// and the system's reason under them (no such file, not an ELF file).
fn loader_said(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(reason) => format!("{e}: {reason}"),
        None => e.to_string(),
    }
}

/// NVRTC, found and bound once for the process, or why not.
fn api() -> Result<&'static Api, String> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(find).as_ref().map_err(Clone::clone)
}

/// Where NVRTC was found, or why not.
pub fn load() -> Result<(), String> {
    api().map(|_| ())
}

/// The NVRTC library in use.
pub fn library() -> Result<PathBuf, String> {
    api().map(|a| a.path.clone())
}

fn find() -> Result<Api, String> {
    // Empty is unset, as for the cache's variables (an empty path would
    // open msclc itself).
    if let Some(path) = std::env::var_os("MSCLC_NVRTC").filter(|p| !p.is_empty()) {
        return Api::open(Path::new(&path));
    }
    let names: Vec<String> = MAJORS.iter().map(|m| format!("libnvrtc.so.{m}")).collect();
    let mut refused = Vec::new();
    for name in &names {
        match Api::open(Path::new(name)) {
            Ok(api) => return Ok(api),
            // The loader found a library of the name that will not do (not
            // NVRTC, another version, damaged): said, not taken for none.
            // It names a file it found by its path, one it did not by the
            // name asked for alone (in the language of the locale); a
            // library of a found NVRTC's own that is missing is named
            // without a path too, and taken for no NVRTC.
            Err(why) if !why.starts_with(NOT_LOADED) || why.contains('/') => refused.push(why),
            Err(_) => {}
        }
    }
    let mut tried = vec!["the loader's path".to_string()];
    for dir in candidate_dirs() {
        for name in &names {
            let lib = dir.join(name);
            if lib.exists() {
                match Api::open(&lib) {
                    Ok(api) => return Ok(api),
                    Err(why) => refused.push(why),
                }
            }
        }
        tried.push(dir.display().to_string());
    }
    let install = "install the CUDA toolkit, or `pip install nvidia-cuda-nvrtc` (13) or `nvidia-cuda-nvrtc-cu12`, or set MSCLC_NVRTC to the library's path";
    if !refused.is_empty() {
        return Err(format!(
            "no NVRTC 12 or 13 that msclc can use: {}; {install} (looked in {})",
            refused.join("; "),
            tried.join(", ")
        ));
    }
    Err(format!(
        "NVRTC 12 or 13 (libnvrtc.so.13, libnvrtc.so.12) not found: {install} (looked in {})",
        tried.join(", ")
    ))
}

/// The toolkits' library folders (newest first), then the wheels' folders
/// in Python's paths.
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        dirs.extend(toolkit_libraries(std::env::var_os(var)));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let mut versioned: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/local")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name.strip_prefix("cuda-")?;
            let key = version
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<Vec<u32>>>()?;
            Some((key, entry.path().join("lib64")))
        })
        .collect();
    versioned.sort_by(|a, b| b.0.cmp(&a.0));
    dirs.extend(versioned.into_iter().map(|(_, dir)| dir));
    let python = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print('\\n'.join(p for p in sys.path if p))",
        ])
        .output();
    if let Ok(out) = python {
        // (Absolute only, as the toolkit's folder is.)
        let stdout = String::from_utf8_lossy(&out.stdout);
        for line in stdout.lines().filter(|l| Path::new(l).is_absolute()) {
            dirs.push(PathBuf::from(line).join("nvidia/cu13/lib"));
            dirs.push(PathBuf::from(line).join("nvidia/cuda_nvrtc/lib"));
        }
    }
    dirs
}

/// The library folder of the toolkit a `CUDA_HOME` or `CUDA_PATH` of
/// `value` names. Only an absolute path names one: an empty or relative
/// value would have msclc load whatever `lib64/libnvrtc.so.*` the folder
/// it runs in holds.
fn toolkit_libraries(value: Option<std::ffi::OsString>) -> Option<PathBuf> {
    let home = PathBuf::from(value?);
    home.is_absolute().then(|| home.join("lib64"))
}

/// A compiled kernel image and whether it came from the cache.
pub struct Compiled {
    pub cubin: Vec<u8>,
    pub from_cache: bool,
}

/// CUBIN for `source`, compiled for `arch` (e.g. "sm_90") with NVRTC options
/// `-std=c++17` plus `extra` (e.g. the dtype define), looked up in and stored
/// to `cache` when given.
///
/// The cubin is what NVRTC's own ptxas made, so the driver loads it without
/// compiling PTX again. The cache is keyed by `cache::key`; reading or
/// writing it never fails a compilation.
pub fn compile(
    source: &str,
    arch: &str,
    extra: &[String],
    cache: Option<&std::path::Path>,
) -> Result<Compiled, String> {
    load()?;
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".to_string(),
    ];
    options.extend(extra.iter().cloned());
    // Without the version there is no sound key: compile without the cache.
    let entry = cache.and_then(|dir| {
        let v = version().ok()?;
        Some((dir, super::cache::key(source, &options, v, arch)))
    });
    if let Some((dir, key)) = &entry {
        if let Some(cubin) = super::cache::read(dir, key) {
            return Ok(Compiled {
                cubin,
                from_cache: true,
            });
        }
    }
    let cubin = compile_cubin(source, &options)?;
    if let Some((dir, key)) = &entry {
        let _ = super::cache::write(dir, key, &cubin);
    }
    Ok(Compiled {
        cubin,
        from_cache: false,
    })
}

/// The NVRTC version (major, minor), for cache keys and messages.
pub fn version() -> Result<(i32, i32), String> {
    api()?.version()
}

/// Destroys the NVRTC program when dropped, on every path out.
struct Program<'a> {
    api: &'a Api,
    handle: Handle,
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        // SAFETY: made by nvrtcCreateProgram and destroyed only here.
        let _ = unsafe { (self.api.destroy)(&mut self.handle) };
    }
}

/// Compiles with NVRTC and takes the CUBIN it made.
fn compile_cubin(source: &str, options: &[String]) -> Result<Vec<u8>, String> {
    let api = api()?;
    let src = CString::new(source).map_err(|_| {
        "the generated source contains a NUL byte; NVRTC cannot take it".to_string()
    })?;
    let options: Vec<CString> = options
        .iter()
        .map(|o| {
            CString::new(o.as_str()).map_err(|_| format!("NVRTC option {o:?} contains a NUL byte"))
        })
        .collect::<Result<_, _>>()?;
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    let name = c"msclc_kernel.cu";
    let mut handle: Handle = std::ptr::null_mut();
    // SAFETY: `src` and `name` are NUL-terminated and outlive the program
    // (it is dropped first); no headers are given.
    let created = unsafe {
        (api.create)(
            &mut handle,
            src.as_ptr(),
            name.as_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    api.check(created, "NVRTC cannot create a program")?;
    let program = Program { api, handle };
    // SAFETY (this and the calls below): `program.handle` is a live
    // program; each buffer holds what NVRTC said it would write.
    let status = unsafe {
        (api.compile)(
            program.handle,
            option_ptrs.len() as c_int,
            option_ptrs.as_ptr(),
        )
    };
    if status != 0 {
        let mut size = 0usize;
        let log = if unsafe { (api.log_size)(program.handle, &mut size) } == 0 && size > 0 {
            let mut bytes = vec![0u8; size];
            if unsafe { (api.log)(program.handle, bytes.as_mut_ptr().cast()) } == 0 {
                let text: Vec<u8> = bytes.into_iter().take_while(|&b| b != 0).collect();
                String::from_utf8_lossy(&text).into_owned()
            } else {
                "(no log)".to_string()
            }
        } else {
            "(no log)".to_string()
        };
        if log.contains("invalid value for --gpu-architecture") {
            let (major, minor) = api.version()?;
            let arch = options.iter().find_map(|o| {
                let o = o.to_str().ok()?;
                o.strip_prefix("--gpu-architecture=")
            });
            return Err(format!(
                "NVRTC {major}.{minor} does not know the architecture {}: a newer NVRTC may (msclc looks for it as MSCLC_NVRTC, on the loader's path and in CUDA's folders), or check the name (sm_80, sm_90, sm_100, ...)",
                arch.unwrap_or("asked for")
            ));
        }
        return Err(rejected(&log, source.len()));
    }
    let mut size = 0usize;
    api.check(
        unsafe { (api.cubin_size)(program.handle, &mut size) },
        "NVRTC made no CUBIN",
    )?;
    if size == 0 {
        return Err("NVRTC made no CUBIN (the architecture must be a real one, sm_XX)".into());
    }
    let mut cubin = vec![0u8; size];
    api.check(
        unsafe { (api.cubin)(program.handle, cubin.as_mut_ptr().cast()) },
        "NVRTC cannot hand over the CUBIN",
    )?;
    Ok(cubin)
}

/// What to say of a compile NVRTC refused with `log`, of a source of
/// `source_bytes`. Memory running out is said as such: the front end
/// says "out of memory" in its log, while ptxas prints its "Memory
/// allocation failure" on standard error and leaves the log only "Ptx
/// assembly aborted". The kernel's tables of op parameters grow with the
/// plan, and NVRTC takes about 200 bytes of memory per byte of source
/// (allreduce at 64 ranks: 1.7 MB of source, 0.43 GB at its peak; at 128
/// ranks, 7.3 MB, 1.4 GB and 9.4 s; at 256 ranks, 5.3 GB and 46 s), and
/// more address space than that.
fn rejected(log: &str, source_bytes: usize) -> String {
    if log.contains("failed to open libnvrtc-builtins") {
        return format!(
            "NVRTC cannot find its builtins library, which it loads beside itself (the source is not at fault): \
             install NVRTC whole (libnvrtc-builtins.so beside libnvrtc.so), or name one that is with MSCLC_NVRTC\n{log}"
        );
    }
    let megabytes = source_bytes as f64 / 1e6;
    let help = format!(
        "NVRTC takes about 200 bytes of memory per byte of source, {:.1} GB for this one, and more \
         address space: give it the memory (`ulimit -v`, the machine's), or compile the plan for fewer ranks",
        megabytes * 200.0 / 1e3
    );
    if log.contains("out of memory") {
        return format!(
            "NVRTC ran out of memory compiling the generated source ({megabytes:.1} MB): {help}\n{log}"
        );
    }
    if log.contains("Ptx assembly aborted") {
        return format!(
            "NVRTC's assembler (ptxas) stopped on the generated source ({megabytes:.1} MB), for the reason it printed above; \
             where that is a \"Memory allocation failure\", memory ran out: {help}\n{log}"
        );
    }
    format!("NVRTC rejected the generated source:\n{log}")
}

#[cfg(test)]
mod tests {
    use super::{rejected, toolkit_libraries};
    use std::path::PathBuf;

    /// NVRTC's two ways of running out of memory (seen under `ulimit -v`
    /// on allreduce at 128 ranks) are said as such, with what the source
    /// needs; any other refusal shows NVRTC's log as it is.
    #[test]
    fn only_an_absolute_toolkit_folder_is_looked_in() {
        let lib = |v: &str| toolkit_libraries(Some(v.into()));
        assert_eq!(lib("/opt/cuda"), Some(PathBuf::from("/opt/cuda/lib64")));
        assert_eq!(lib(""), None);
        assert_eq!(lib("cuda"), None);
        assert_eq!(toolkit_libraries(None), None);
    }

    #[test]
    fn memory_running_out_is_said_as_such() {
        let front = "msclc_kernel.cu(52806): catastrophic error: out of memory\n";
        let said = rejected(front, 6_000_000);
        assert!(
            said.starts_with("NVRTC ran out of memory compiling the generated source (6.0 MB)"),
            "{said}"
        );
        assert!(said.contains("1.2 GB for this one"), "{said}");
        assert!(said.ends_with(front), "{said}");
        let ptxas = rejected(
            "ptxas fatal   : Ptx assembly aborted due to errors\n",
            6_000_000,
        );
        assert!(ptxas.contains("Memory allocation failure"), "{ptxas}");
        assert!(ptxas.contains("1.2 GB for this one"), "{ptxas}");
        let syntax = "msclc_kernel.cu(3): error: expected a \";\"\n";
        assert_eq!(
            rejected(syntax, 100),
            format!("NVRTC rejected the generated source:\n{syntax}")
        );
    }
}
