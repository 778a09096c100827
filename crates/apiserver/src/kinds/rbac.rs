//! RBAC's kinds: their names may hold colons (`system:basic-user`), as RBAC's validation allows.

use apimachinery::validation::NameRule;

use super::Kind;

/// Roles, ClusterRoles and their bindings.
pub(super) struct Rbac;

impl Kind for Rbac {
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }
}
