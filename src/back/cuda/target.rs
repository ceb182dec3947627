//! What a kernel is built for: the element type NVRTC is told to reduce
//! in, and the GPU architectures the prelude's code runs on.

use crate::ir::Dtype;

/// The prelude's tag of each element type reductions work in, chosen at
/// compile time with `-DMSCL_DTYPE=TAG` (float32 when not chosen).
pub fn dtype_define(dtype: Dtype) -> String {
    let tag = match dtype {
        Dtype::Float32 => "mscl_f32",
        Dtype::Float16 => "mscl_f16",
        Dtype::Bfloat16 => "mscl_bf16",
    };
    format!("-DMSCL_DTYPE={tag}")
}

/// Whether the kernels build for architecture `sm` (70 for sm_70) in
/// `dtype`: from sm_70 (their loads and stores with acquire and release
/// order), and from sm_80 in bfloat16 (its packed arithmetic); else why not.
pub fn arch_supports(sm: u32, dtype: Dtype) -> Result<(), String> {
    if sm < 70 {
        return Err(format!(
            "sm_{sm} is older than msclc's kernels run on: they need sm_70 or later (acquire and release loads and stores)"
        ));
    }
    if sm < 80 && dtype == Dtype::Bfloat16 {
        return Err(format!(
            "bfloat16 kernels need sm_80 or later (packed bfloat16 arithmetic), and sm_{sm} is older: use float16 or float32 there"
        ));
    }
    Ok(())
}
