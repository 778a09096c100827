//! The embedded server's modules stand in layers (see the crate's top-level doc): no module imports
//! one that imports it back, but a parent module and its own child, and storage names no controller.

use std::path::Path;

#[test]
fn no_import_loop_but_a_parent_and_its_child() {
    testenv::import_loops::assert_none_beyond_a_parent_and_its_child("crates/apiserver/src");
}

#[test]
fn storage_names_no_controller() {
    let store = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/store"));
    for entry in std::fs::read_dir(store).expect("src/store") {
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
