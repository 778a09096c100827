//! The embedded server's modules stand in layers (see the crate's top-level doc): no module imports
//! one that imports it back, but a parent module and its own child; storage names no controller, no
//! layer above it and no kind.

use std::path::Path;

#[test]
fn no_import_loop_but_a_parent_and_its_child() {
    testenv::import_loops::assert_none_beyond_a_parent_and_its_child("crates/apiserver/src");
}

/// Each line of storage's code (comments and tests left out: tests may write through the layers
/// above), with its file and number: the files of `src/store` and of its folders.
fn storage_code() -> Vec<(String, String)> {
    let mut folders = vec![Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/store")).to_path_buf()];
    let mut files = Vec::new();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder of src/store") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let mut lines = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a source file");
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (number, line) in code.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            lines.push((format!("{}:{}", path.display(), number + 1), code.to_owned()));
        }
    }
    lines
}

#[test]
fn storage_names_no_controller_and_no_layer_above_it() {
    for (place, code) in storage_code() {
        for above in [
            "emulated",
            "crate::flowcontrol",
            "strategy",
            "crate::admission",
            "crate::http",
        ] {
            assert!(!code.contains(above), "{place} names {above}: {code}");
        }
    }
}

/// No string in storage's code is a group, a resource or a kind the server serves: what differs by
/// kind is the strategy's, the hooks' or the API machinery's to say.
#[test]
fn storage_names_no_kind() {
    let mut names = std::collections::BTreeSet::new();
    for rt in apimachinery::resource::builtins() {
        names.extend([rt.plural.clone(), rt.kind.clone(), format!("/{}", rt.plural)]);
        if !rt.group.is_empty() {
            names.insert(rt.group.clone());
        }
    }
    for (place, code) in storage_code() {
        let literals = code.split('"').skip(1).step_by(2);
        for literal in literals {
            assert!(
                !names.contains(literal),
                "{place} names the kind {literal:?}: {code}"
            );
        }
    }
}
