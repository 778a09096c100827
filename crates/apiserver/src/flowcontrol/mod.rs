//! API Priority and Fairness, as far as the embedded server goes: the FlowSchemas and
//! PriorityLevelConfigurations kube-apiserver creates at start-up (`bootstrap.rs`), each FlowSchema's
//! `Dangling` condition kept as kube-apiserver's configuration controller keeps it (`dangling.rs`),
//! and every request classified by the FlowSchemas in matching order (`classify.rs`), its response
//! naming the FlowSchema and priority level it matched. No request is queued, limited or rejected:
//! every priority level lets everything through at once.

mod bootstrap;
mod classify;
mod dangling;

pub(crate) use bootstrap::ensure_configuration;
pub use classify::{Classifier, Target, User};
pub(crate) use dangling::keep_dangling_conditions;

pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
const FLOW_SCHEMAS: &str = "flowschemas";
const PRIORITY_LEVELS: &str = "prioritylevelconfigurations";

/// Whether the objects stored under `storage_key` configure API Priority and Fairness.
pub(crate) fn configures(storage_key: &str) -> bool {
    storage_key
        .strip_prefix(GROUP)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|plural| plural == FLOW_SCHEMAS || plural == PRIORITY_LEVELS)
}

/// Every PriorityLevelConfiguration stored, whose nominal seats the metrics report.
pub(crate) fn priority_levels(store: &crate::store::Store) -> Vec<serde_json::Value> {
    store
        .resolve(GROUP, "v1", PRIORITY_LEVELS)
        .map(|rt| store.list(&rt, None).0)
        .unwrap_or_default()
}
