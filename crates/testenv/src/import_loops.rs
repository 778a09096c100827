//! The check each crate's `import_graph` test makes of its own sources: `scripts/import-loops.py` finds
//! the modules that import each other, and fails on any loop but a parent module and its own child.

use std::{path::Path, process::Command};

/// The workspace, where the script and every crate's sources are.
fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Panics, with the loops and the imports that close them, when the modules under `src` (a path from
/// the workspace root, such as `crates/apiserver/src`) import each other in a loop larger than a
/// parent module and its own child.
pub fn assert_none_beyond_a_parent_and_its_child(src: &str) {
    let output = Command::new("python3")
        .args(["scripts/import-loops.py", src])
        .current_dir(workspace())
        .output()
        .expect("python3 runs scripts/import-loops.py");
    assert!(
        output.status.success(),
        "import loops in {src}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
