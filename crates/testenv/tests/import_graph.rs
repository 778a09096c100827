//! The crates beneath the embedded server (the API machinery, serving, kube-envtest) stand in layers
//! as the server's own modules do: no module imports one that imports it back, but a parent module and
//! its own child. The server and the operator check their own sources in their `import_graph` tests.

#[test]
fn the_crates_beneath_the_server_have_no_import_loop() {
    for src in [
        "crates/apimachinery/src",
        "crates/serving/src",
        "crates/kube-envtest/src",
    ] {
        testenv::import_loops::assert_none_beyond_a_parent_and_its_child(src);
    }
}
