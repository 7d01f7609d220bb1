//! `src/generated.rs` must be what planus-cli makes of `schema/tflite.fbs`.
//!
//! Runs the generator when `planus` (planus-cli 1.2) is on the PATH and
//! compares its output with the committed file; without it the test says
//! so and passes, unless `QNEON_REQUIRE_PLANUS` is set (then it fails).

use std::path::Path;
use std::process::Command;

#[test]
fn generated_code_matches_the_schema() {
    let required = std::env::var_os("QNEON_REQUIRE_PLANUS").is_some();
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output =
        std::env::temp_dir().join(format!("qneon-tflite-generated-{}.rs", std::process::id()));
    // Run from the crate directory with the same relative schema path as
    // the committed file, which quotes it.
    let status = Command::new("planus")
        .current_dir(crate_dir)
        .arg("rust")
        .arg("-o")
        .arg(&output)
        .arg("schema/tflite.fbs")
        .status();
    let Ok(status) = status else {
        assert!(
            !required,
            "planus is not installed (cargo install planus-cli --version =1.2.0 --locked)"
        );
        eprintln!("planus is not installed: generated code not checked");
        return;
    };
    assert!(status.success(), "planus failed on schema/tflite.fbs");
    let fresh = std::fs::read_to_string(&output).unwrap();
    std::fs::remove_file(&output).unwrap();
    // planus-cli has no version flag; its output names the release it
    // pairs with. Another release generates other code.
    if !fresh.contains("check_version_compatibility(\"planus-1.2.") {
        assert!(!required, "the planus on the PATH is not planus-cli 1.2");
        eprintln!("the planus on the PATH is not planus-cli 1.2: generated code not checked");
        return;
    }
    let committed = std::fs::read_to_string(crate_dir.join("src/generated.rs")).unwrap();
    assert!(
        fresh == committed,
        "src/generated.rs is stale: run `planus rust -o src/generated.rs schema/tflite.fbs` in tflite/"
    );
}
