//! Back ends: turn a finished plan into what runs it.

pub mod cuda;
pub mod json;
pub mod listing;
