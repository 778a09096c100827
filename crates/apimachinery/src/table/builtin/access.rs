//! RoleBindings and ClusterRoleBindings: the role they grant and to whom.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Doc, NAME, column, fields, wide};

pub static ROLE_BINDING: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Role",
            Doc::Text(
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
            ),
        ),
        AGE,
        wide("Users", Doc::Text("Users in the roleBinding")),
        wide("Groups", Doc::Text("Groups in the roleBinding")),
        wide("ServiceAccounts", Doc::Text("ServiceAccounts in the roleBinding")),
    ],
    cells: binding,
};

pub static CLUSTER_ROLE_BINDING: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Role",
            Doc::Text(
                "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
            ),
        ),
        AGE,
        wide("Users", Doc::Text("Users in the clusterRoleBinding")),
        wide("Groups", Doc::Text("Groups in the clusterRoleBinding")),
        wide(
            "ServiceAccounts",
            Doc::Text("ServiceAccounts in the clusterRoleBinding"),
        ),
    ],
    cells: binding,
};

fn binding(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        fields::text(o, "/roleRef/kind"),
        fields::text(o, "/roleRef/name")
    );
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in fields::items(o, "/subjects") {
        let name = fields::text(subject, "/name");
        match fields::text(subject, "/kind") {
            "User" => users.push(name.to_owned()),
            "Group" => groups.push(name.to_owned()),
            "ServiceAccount" => accounts.push(format!("{}/{name}", fields::text(subject, "/namespace"))),
            _ => {}
        }
    }
    vec![
        fields::name(o),
        json!(role),
        fields::age(o, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(accounts.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_bindings_list_their_role_and_subjects_by_kind() {
        let binding = json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "ann"}, {"kind": "User", "name": "bob"},
                {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}]});
        assert_eq!(
            (ROLE_BINDING.cells)(&binding, jiff::Timestamp::UNIX_EPOCH),
            [
                json!("b"),
                json!("ClusterRole/view"),
                json!("<unknown>"),
                json!("ann, bob"),
                json!("devs"),
                json!("tools/ci")
            ]
        );
    }
}
