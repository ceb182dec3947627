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

/// Stack for the threads that compile (the command's, and those that
/// evaluate a program's shards). The checker and the evaluator recurse
/// over the syntax tree (up to `syntax::nesting::MAX_NESTING` levels), and
/// a deep tree that the parser refuses is still dropped recursively: the
/// main thread's 8 MB is too little for that in a debug build. The memory
/// is reserved, not used, until a deep program needs it.
pub const STACK_BYTES: usize = 1 << 30;

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
pub mod stack;
pub mod syntax;
pub mod timing;
pub mod tune;
pub mod units;
pub mod vocab;
