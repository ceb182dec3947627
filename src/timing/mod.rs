//! The timing model: how long a plan takes on a topology, predicted from
//! the simulator's execution, before any GPU.

pub mod svg;
pub mod timeline;
pub mod trace;

pub use timeline::*;
