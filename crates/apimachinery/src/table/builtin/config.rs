//! Namespaces, ConfigMaps, Secrets, ServiceAccounts and Leases.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Doc, NAME, column, fields};

const CONFIG_MAP_DEF: &str = "io.k8s.api.core.v1.ConfigMap";
const SECRET_DEF: &str = "io.k8s.api.core.v1.Secret";

pub static NAMESPACE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Status", Doc::Text("The status of the namespace")),
        AGE,
    ],
    cells: |o, now| {
        vec![
            fields::name(o),
            json!(fields::text(o, "/status/phase")),
            fields::age(o, now),
        ]
    },
};

pub static CONFIG_MAP: BuiltInTable = BuiltInTable {
    columns: &[NAME, column("Data", Doc::Field(CONFIG_MAP_DEF, "data")), AGE],
    cells: |o, now| {
        let entries = fields::count(o, "/data") + fields::count(o, "/binaryData");
        vec![fields::name(o), json!(entries), fields::age(o, now)]
    },
};

pub static SECRET: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Type", Doc::Field(SECRET_DEF, "type")),
        column("Data", Doc::Field(SECRET_DEF, "data")),
        AGE,
    ],
    cells: |o, now| {
        vec![
            fields::name(o),
            json!(fields::text(o, "/type")),
            json!(fields::count(o, "/data")),
            fields::age(o, now),
        ]
    },
};

pub static SERVICE_ACCOUNT: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Secrets",
            Doc::Field("io.k8s.api.core.v1.ServiceAccount", "secrets"),
        ),
        AGE,
    ],
    cells: |o, now| {
        vec![
            fields::name(o),
            json!(fields::count(o, "/secrets")),
            fields::age(o, now),
        ]
    },
};

pub static LEASE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column(
            "Holder",
            Doc::Field("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
        ),
        AGE,
    ],
    cells: lease,
};

fn lease(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/holderIdentity")),
        fields::age(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_config_cells_count_entries() {
        let now: jiff::Timestamp = "2026-11-22T10:00:10Z".parse().unwrap();
        let meta = json!({"name": "c", "creationTimestamp": "2026-11-22T10:00:00Z"});
        let config_map = json!({"metadata": meta, "data": {"a": "1"}, "binaryData": {"b": "AA=="}});
        assert_eq!(
            (CONFIG_MAP.cells)(&config_map, now),
            [json!("c"), json!(2), json!("10s")]
        );
        let secret = json!({"metadata": meta, "type": "Opaque", "data": {"a": "MQ=="}});
        assert_eq!(
            (SECRET.cells)(&secret, now),
            [json!("c"), json!("Opaque"), json!(1), json!("10s")]
        );
        let namespace = json!({"metadata": {"name": "n"}, "status": {"phase": "Terminating"}});
        assert_eq!(
            (NAMESPACE.cells)(&namespace, now),
            [json!("n"), json!("Terminating"), json!("<unknown>")]
        );
        let lease = json!({"metadata": meta, "spec": {"holderIdentity": "me"}});
        assert_eq!((LEASE.cells)(&lease, now)[1], json!("me"));
    }
}
