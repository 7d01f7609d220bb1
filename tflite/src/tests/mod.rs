//! Tests over models built with the generated writer.

mod fixtures;
mod malformed;
mod micro_files;
mod mutations;
mod real_files;
mod round_trip;
mod schema_slots;
