//! Front ends other than `.mscl` source: reading an MSCCL++ JSON execution
//! plan (from msclc or the Python DSL) into the plan IR, so that the
//! simulator and the CUDA back end take either.

pub mod plan_json;
