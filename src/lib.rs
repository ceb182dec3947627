//! msclc: a compiler for `.mscl`, a textual language for GPU collective
//! algorithms, to MSCCL++ execution plans.
//!
//! The pipeline, one module per stage:
//! `syntax` (lex, parse) -> `check` (static types) -> `eval` (run the
//! generator into the plan `ir`) -> `passes` -> `back` (JSON plan).

pub mod diag;
pub mod syntax;
