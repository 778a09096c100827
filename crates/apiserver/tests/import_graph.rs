//! The embedded server's modules stand in layers (see the crate's top-level doc): no module imports
//! one that imports it back, but a parent module and its own child, and storage names no controller.

use std::{path::Path, process::Command};

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn no_import_loop_but_a_parent_and_its_child() {
    let output = Command::new("python3")
        .args(["scripts/import-loops.py", "crates/apiserver/src"])
        .current_dir(workspace())
        .output()
        .expect("python3 runs scripts/import-loops.py");
    assert!(
        output.status.success(),
        "import loops:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn storage_names_no_controller() {
    let store = workspace().join("crates/apiserver/src/store");
    for entry in std::fs::read_dir(&store).expect("src/store") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("a source file");
        // Tests may open a store with the controllers' hooks; the storage code itself may not.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (number, line) in code.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            assert!(
                !code.contains("emulated") && !code.contains("crate::flowcontrol"),
                "{}:{} names a controller: {line}",
                path.display(),
                number + 1
            );
        }
    }
}
