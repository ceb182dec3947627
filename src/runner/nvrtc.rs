//! Compiling generated CUDA source to PTX with NVRTC, loaded at run time.
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

/// PTX for `source`, compiled for `arch` (e.g. "sm_90") with the element
/// type `dtype_define` selects.
pub fn compile(source: &str, arch: &str, dtype_define: &str) -> Result<String, String> {
    load()?;
    let options = cudarc::nvrtc::CompileOptions {
        options: vec![
            format!("--gpu-architecture={arch}"),
            "-std=c++17".into(),
            dtype_define.into(),
        ],
        name: Some("msclc_kernel.cu".into()),
        ..Default::default()
    };
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(source, options).map_err(|e| match e {
        cudarc::nvrtc::CompileError::CompileError { log, .. } => {
            format!(
                "NVRTC rejected the generated source:\n{}",
                log.to_string_lossy()
            )
        }
        other => format!("NVRTC failed: {other:?}"),
    })?;
    Ok(ptx.to_src())
}
