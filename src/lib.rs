//! msclc: a compiler for `.mscl`, a textual language for GPU collective
//! algorithms, to MSCCL++ execution plans.
//!
//! The pipeline, one module per stage:
//! `syntax` (lex, parse) -> `check` (static types) -> `eval` (run the
//! program into the plan `ir`) -> `passes` -> `back` (JSON plan, CUDA);
//! `front` reads a JSON plan into the `ir`, `sim` executes one on the CPU,
//! `timing` predicts its time, `runner` runs it on a GPU, `tune` chooses
//! a program's parallelism for each message size. `driver` strings
//! the stages together. docs/architecture.md gives each module its layer:
//! a module uses only the layers above its own.

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
pub mod parallel;
pub mod passes;
pub mod runner;
pub mod sim;
pub mod syntax;
pub mod timing;
pub mod tune;
pub mod units;
pub mod vocab;
