//! The commands of `msclc`, a module each (its arguments and its `exec`),
//! and what they share: the output streams, how a command ends, the
//! common options and the reading of a program or plan.

#[macro_use]
pub mod streams;
pub mod check;
pub mod compile;
pub mod fmt;
pub mod input;
pub mod install;
pub mod lsp;
pub mod options;
pub mod outcome;
pub mod run;
pub mod sim;
pub mod tune;
