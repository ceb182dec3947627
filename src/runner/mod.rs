//! `msclc run`: compiles a plan's CUDA source with NVRTC, runs every rank
//! on one GPU, checks the results against the collective's definition and
//! times the kernel per message size, printing an nccl-tests table.
//!
//! `workload` sizes buffers and checks results, `nvrtc` finds and calls
//! NVRTC, `cache` keeps the cubins it makes on disk, `gpu` drives the
//! device through cudarc, `table` prints.

pub mod cache;
pub mod gpu;
pub mod nvrtc;
pub mod table;
pub mod workload;

use crate::ir::Dtype;
use std::path::PathBuf;

/// What `msclc run` was asked for.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub dtype: Dtype,
    /// Sizes double from `min_size` up to `max_size` bytes.
    pub min_size: u64,
    pub max_size: u64,
    pub iters: u32,
    pub warmup: u32,
    /// The cubin cache folder (`cache::default_dir()`); None: no cache.
    pub cache: Option<PathBuf>,
    /// How long any one wait of the kernel may spin before it gives up.
    pub timeout: std::time::Duration,
}

/// Why `msclc run` could not finish.
#[derive(Debug)]
pub enum RunError {
    /// No GPU, NVRTC, memory, ... (`Code::Device`), or a plan with no
    /// CUDA form (`Code::NoCudaForm`).
    Problem(crate::diag::Diagnostic),
    /// A wait of the kernel gave up: the plan deadlocks (or is starved).
    Stuck(Box<crate::back::cuda::report::GaveUp>),
}

impl From<crate::diag::Diagnostic> for RunError {
    fn from(d: crate::diag::Diagnostic) -> RunError {
        RunError::Problem(d)
    }
}

impl From<String> for RunError {
    fn from(message: String) -> RunError {
        RunError::Problem(crate::diag::Diagnostic::plain(
            crate::diag::Code::Device,
            message,
        ))
    }
}

impl From<&str> for RunError {
    fn from(message: &str) -> RunError {
        RunError::from(message.to_string())
    }
}

/// Parses a byte count: `1024`, `1K`, `4M`, `1G` (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, scale) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let scale = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("`{text}`: size suffixes are K, M and G")),
            };
            (&t[..i], scale)
        }
        _ => (t, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("`{text}` is not a byte count (like 1024, 64K, 1M)"))
}

/// Parses `MIN:MAX` (or one size for both).
pub fn parse_size_range(text: &str) -> Result<(u64, u64), String> {
    let (lo, hi) = match text.split_once(':') {
        Some((lo, hi)) => (parse_size(lo)?, parse_size(hi)?),
        None => {
            let s = parse_size(text)?;
            (s, s)
        }
    };
    if lo > hi {
        return Err(format!(
            "`{text}`: the smallest size is larger than the largest"
        ));
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size_range("1K:1G"), Ok((1024, 1 << 30)));
        assert_eq!(parse_size_range("8M"), Ok((8 << 20, 8 << 20)));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size_range("2M:1M").is_err());
        assert!(parse_size("99999999999G").is_err());
    }
}
