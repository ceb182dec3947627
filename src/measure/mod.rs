//! A collective measured as nccl-tests measures it: the workload at one
//! message size (bytes, elements, chunks, each rank's buffers and data),
//! and the table's columns. `msclc run` prints measurements in it, `msclc
//! sim --timing` predictions.

pub mod columns;
pub mod workload;
