//! The operator's modules stand in layers: no module imports one that imports it back, but a parent
//! module and its own child.

use std::{path::Path, process::Command};

#[test]
fn no_import_loop_but_a_parent_and_its_child() {
    let output = Command::new("python3")
        .args(["scripts/import-loops.py", "crates/operator/src"])
        .current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")))
        .output()
        .expect("python3 runs scripts/import-loops.py");
    assert!(
        output.status.success(),
        "import loops:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
