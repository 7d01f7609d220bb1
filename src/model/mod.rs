//! Model files and (later) the layers that run them.

pub mod qnb;
