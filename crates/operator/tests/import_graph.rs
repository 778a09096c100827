//! The operator's modules stand in layers: no module imports one that imports it back, but a parent
//! module and its own child.

#[test]
fn no_import_loop_but_a_parent_and_its_child() {
    testenv::import_loops::assert_none_beyond_a_parent_and_its_child("crates/operator/src");
}
