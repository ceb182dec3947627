//! Compiling generated CUDA source to a CUBIN with NVRTC, loaded at run
//! time; compiled cubins are kept in an on-disk cache (`super::cache`).
//!
//! NVRTC ships with the CUDA toolkit or as the `nvidia-cuda-nvrtc-cu12`
//! wheel from PyPI. cudarc finds it on the loader's path; when it is not
//! there we look where a toolkit or the wheel puts it and load it by its
//! full path first, after which the loader hands cudarc that library (it
//! matches libraries already loaded by their soname, libnvrtc.so.12).

use std::path::PathBuf;
use std::sync::OnceLock;

/// Where NVRTC was found, or why not.
pub fn load() -> Result<(), String> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED.get_or_init(find_and_load).clone()
}

fn find_and_load() -> Result<(), String> {
    if let Ok(path) = std::env::var("MSCLC_NVRTC") {
        return preload(&PathBuf::from(path));
    }
    // SAFETY: only tries to open the library (cudarc's own presence check).
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Ok(());
    }
    let mut tried = Vec::new();
    for dir in candidate_dirs() {
        let lib = dir.join("libnvrtc.so.12");
        if lib.exists() {
            return preload(&lib);
        }
        tried.push(dir.display().to_string());
    }
    Err(format!(
        "NVRTC (libnvrtc.so.12) not found: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc-cu12`, or set MSCLC_NVRTC to the library's path (looked in the loader's path{}{})",
        if tried.is_empty() { "" } else { ", " },
        tried.join(", ")
    ))
}

fn preload(lib: &std::path::Path) -> Result<(), String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: loading NVRTC runs its initialisers only; the library stays
    // loaded for the life of the process (cudarc calls into it).
    let library = unsafe { Library::open(Some(lib), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| format!("cannot load NVRTC from {}: {e}", lib.display()))?;
    std::mem::forget(library);
    // SAFETY: as above.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(format!(
            "{} is not an NVRTC cudarc can use (CUDA 12 needed)",
            lib.display()
        ))
    }
}

/// A toolkit's library folder, then the wheel's folder in Python's paths.
fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Ok(home) = std::env::var(var) {
            dirs.push(PathBuf::from(home).join("lib64"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let python = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print('\\n'.join(p for p in sys.path if p))",
        ])
        .output();
    if let Ok(out) = python {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            dirs.push(PathBuf::from(line).join("nvidia/cuda_nvrtc/lib"));
        }
    }
    dirs
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
    load()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: NVRTC is loaded; it writes two ints through valid pointers.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| format!("cannot read NVRTC's version: {e:?}"))?;
    Ok((major, minor))
}

/// Destroys the NVRTC program when dropped, on every path out.
struct Program(cudarc::nvrtc::sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: made by create_program and destroyed only here.
        let _ = unsafe { cudarc::nvrtc::result::destroy_program(self.0) };
    }
}

/// Compiles with NVRTC and takes the CUBIN it made (NVRTC is loaded).
fn compile_cubin(source: &str, options: &[String]) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    use std::ffi::CString;
    let src = CString::new(source).map_err(|_| {
        "the generated source contains a NUL byte; NVRTC cannot take it".to_string()
    })?;
    if let Some(bad) = options.iter().find(|o| o.contains('\0')) {
        return Err(format!("NVRTC option {bad:?} contains a NUL byte"));
    }
    let name = c"msclc_kernel.cu";
    // `src` and `name` outlive the program: it is dropped first.
    let program = Program(
        result::create_program(&src, Some(name))
            .map_err(|e| format!("NVRTC cannot create a program: {e:?}"))?,
    );
    // SAFETY (this and the calls below): `program.0` is a live program.
    if unsafe { result::compile_program(program.0, options) }.is_err() {
        let log = match unsafe { result::get_program_log(program.0) } {
            Ok(raw) => {
                let bytes: Vec<u8> = raw
                    .iter()
                    .take_while(|&&c| c != 0)
                    .map(|&c| c as u8)
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Err(e) => format!("(no log: {e:?})"),
        };
        return Err(format!("NVRTC rejected the generated source:\n{log}"));
    }
    let mut size = 0usize;
    unsafe { sys::nvrtcGetCUBINSize(program.0, &mut size) }
        .result()
        .map_err(|e| format!("NVRTC made no CUBIN: {e:?}"))?;
    if size == 0 {
        return Err("NVRTC made no CUBIN (the architecture must be a real one, sm_XX)".into());
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` holds the `size` bytes NVRTC said it would write.
    unsafe { sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast()) }
        .result()
        .map_err(|e| format!("NVRTC cannot hand over the CUBIN: {e:?}"))?;
    Ok(cubin)
}
