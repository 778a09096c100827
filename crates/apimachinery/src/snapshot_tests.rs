//! The snapshot of the built-in kinds' types (and of the OpenAPI v2 document's messages) in
//! `generated/` against what this build read from the Go modules (feature `go-modules`). A build
//! without that feature embeds the snapshot instead, byte for byte (build.rs), so it must say what the
//! modules say. `make generate` rewrites it (`UPDATE_SNAPSHOT=1` on this test).

use std::path::Path;

/// Each snapshot file, beside what build.rs derived from the Go modules for it.
const FILES: [(&str, &str); 3] = [
    (
        "descriptors.txt",
        include_str!(concat!(env!("OUT_DIR"), "/descriptors.txt")),
    ),
    (
        "go_fields.tsv",
        include_str!(concat!(env!("OUT_DIR"), "/go_fields.tsv")),
    ),
    (
        "openapi_v2.txt",
        include_str!(concat!(env!("OUT_DIR"), "/openapi_v2.txt")),
    ),
];

#[test]
fn the_committed_snapshot_says_what_the_go_modules_say() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("generated");
    let update = std::env::var_os("UPDATE_SNAPSHOT").is_some();
    let mut drifted = Vec::new();
    for (name, from_modules) in FILES {
        let path = dir.join(name);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == from_modules {
            continue;
        }
        if update {
            std::fs::create_dir_all(&dir).expect("generated/ can be made");
            std::fs::write(&path, from_modules).expect("the snapshot can be written");
            continue;
        }
        let line = committed
            .lines()
            .zip(from_modules.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(from_modules.lines().count()));
        drifted.push(format!("generated/{name} (from line {})", line + 1));
    }
    assert!(
        drifted.is_empty(),
        "{} differ from the Go modules testenv/control-plane/go.mod pins: run `make generate` and commit the result",
        drifted.join(", ")
    );
}
