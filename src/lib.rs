//! msclc: a compiler for `.mscl`, a textual language for GPU collective
//! algorithms, to MSCCL++ execution plans.
//!
//! The pipeline, one module per stage:
//! `syntax` (lex, parse) -> `check` (static types) -> `eval` (run the
//! generator into the plan `ir`) -> `passes` -> `back` (JSON plan).
//! Beside it, `format` lays source text out canonically (`msclc fmt`).

pub mod back;
pub mod check;
pub mod diag;
pub mod driver;
pub mod eval;
pub mod files;
pub mod format;
pub mod front;
pub mod install;
pub mod ir;
pub mod lsp;
pub mod measure;
pub mod memory;
pub mod passes;
pub mod runner;
pub mod sim;
pub mod syntax;
pub mod timing;
pub mod units;
pub mod vocab;
