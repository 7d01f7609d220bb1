//! Generates the FlatBuffers code of the TFLite schema at build time.
//!
//! planus 1.2's generator (its translation and code-generation crates, run
//! here as libraries) reads `schema/tflite.fbs` and writes the owned tables,
//! their zero-copy `...Ref` readers and builders to
//! `$OUT_DIR/tflite_schema.rs`, which `src/lib.rs` includes. The generator
//! formats its output with `rustfmt` (a rustup default component).
//!
//! planus derives serde's `Serialize` and `Deserialize` on every owned
//! type, with no switch to turn that off. The reader serializes nothing, so
//! the derives are taken out here and the crate does not depend on serde
//! (nor build serde_derive and syn).

use std::path::{Path, PathBuf};

const SCHEMA: &str = "schema/tflite.fbs";

fn main() {
    println!("cargo:rerun-if-changed={SCHEMA}");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match generate() {
        Ok(code) => {
            if let Err(e) = std::fs::write(out.join("tflite_schema.rs"), code) {
                fail(&format!("writing the generated code: {e}"));
            }
        }
        Err(e) => fail(&e),
    }
}

/// Stops the build with `message` (a build script reports by exit status).
fn fail(message: &str) -> ! {
    eprintln!("qneon-tflite build: {message}");
    std::process::exit(1);
}

/// planus's code for the schema, without the serde derives.
fn generate() -> Result<String, String> {
    // The path is given relative to the crate directory (cargo's working
    // directory for build scripts), so the generated doc comments name
    // `schema/tflite.fbs` on every machine.
    let declarations = planus_translation::translate_files_with_options(
        &[Path::new(SCHEMA).to_path_buf()],
        planus_translation::ConverterOptions {
            ignore_docstring_errors: false,
        },
    )
    // planus printed the schema's errors already.
    .ok_or_else(|| format!("{SCHEMA} does not translate (errors above)"))?;
    let code = planus_codegen::generate_rust(&declarations)
        .map_err(|e| format!("planus code generation (needs rustfmt on PATH): {e}"))?;
    without_serde(&code)
}

/// `code` without its serde derives. They come in two shapes, one path per
/// line of a long derive list, or both at the end of a short one; anything
/// else naming serde is a planus this does not know, refused.
fn without_serde(code: &str) -> Result<String, String> {
    const SHORT_LIST_END: &str = ", ::serde::Serialize, ::serde::Deserialize)]";
    let mut kept = String::with_capacity(code.len());
    for line in code.lines() {
        let path = line.trim();
        if path == "::serde::Serialize," || path == "::serde::Deserialize," {
            continue;
        }
        kept.push_str(&line.replace(SHORT_LIST_END, ")]"));
        kept.push('\n');
    }
    if let Some(at) = kept.find("serde") {
        let line = kept[..at].lines().count();
        return Err(format!(
            "planus output names serde in a form this does not remove (line {line})"
        ));
    }
    Ok(kept)
}
