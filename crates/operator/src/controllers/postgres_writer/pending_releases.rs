//! Releases the database could not take yet, kept where a restart finds them.
//!
//! `demo.yash.com/leave-row` must let a resource go while the database is down, so its release (the
//! row leaving the ledger) may have to wait. Until it lands, the ledger still lists the row as ours,
//! and a sweep that forgot the release would delete the very row the user asked to keep. Memory
//! alone is forgotten by a restart, so each waiting release is also written to a ConfigMap in the
//! operator's own namespace before the resource may go, and every sweep applies what the ConfigMap
//! holds before it reads the ledger.
//!
//! One entry per released row: the key is `<table>.<owner uid>` (a table name holds no dot, and a
//! resource has one row per table), the value the row's id. Entries are added and removed with JSON
//! merge patches of their own key, so concurrent releases never overwrite one another and need no
//! read first.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Map, Value, json};

use crate::{
    Result,
    db::{OwnedRow, TableName},
};

/// The ConfigMap's name, in the operator's namespace.
pub const CONFIG_MAP: &str = "postgres-writer-pending-releases";

/// The ConfigMap of waiting releases.
#[derive(Clone)]
pub struct PendingReleases {
    api: Api<ConfigMap>,
}

impl PendingReleases {
    /// The waiting releases kept in `namespace`, the operator's own.
    pub fn new(client: kube::Client, namespace: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
        }
    }

    /// Records `rows` as released. The resource may go only once this returned: from then on a
    /// restarted operator finds the release.
    pub async fn record(&self, rows: &[OwnedRow]) -> Result<()> {
        let data: Map<String, Value> = rows.iter().map(|row| (key(row), json!(row.id))).collect();
        match self.patch_data(data.clone()).await {
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            other => return Ok(other?),
        }
        let config_map: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": CONFIG_MAP},
            "data": data,
        }))?;
        match self.api.create(&PostParams::default(), &config_map).await {
            Ok(_) => Ok(()),
            // Another release created it meanwhile: add ours to it.
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(self.patch_data(data).await?),
            Err(error) => Err(error.into()),
        }
    }

    /// Every recorded release.
    pub async fn list(&self) -> Result<Vec<OwnedRow>> {
        let Some(config_map) = self.api.get_opt(CONFIG_MAP).await? else {
            return Ok(Vec::new());
        };
        Ok(config_map
            .data
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(key, id)| parse(&key, id))
            .collect())
    }

    /// Forgets `rows`, whose release reached the ledger. Entries recorded meanwhile stay.
    pub async fn forget(&self, rows: &[OwnedRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let data: Map<String, Value> = rows.iter().map(|row| (key(row), Value::Null)).collect();
        match self.patch_data(data).await {
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            other => Ok(other?),
        }
    }

    async fn patch_data(&self, data: Map<String, Value>) -> kube::Result<()> {
        self.api
            .patch(
                CONFIG_MAP,
                &PatchParams::default(),
                &Patch::Merge(json!({ "data": data })),
            )
            .await
            .map(drop)
    }
}

fn key(row: &OwnedRow) -> String {
    format!("{}.{}", row.table, row.owner_uid)
}

/// The release an entry records; `None` for an entry this operator did not write.
fn parse(key: &str, id: String) -> Option<OwnedRow> {
    let (table, owner_uid) = key.split_once('.')?;
    Some(OwnedRow {
        table: TableName::parse(table).ok()?,
        id,
        owner_uid: owner_uid.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_as_the_row_it_records() {
        let row = OwnedRow {
            table: TableName::parse("students").unwrap(),
            id: "default/sample-student".into(),
            owner_uid: "0b6f1c9e-3f2a-4d7b-9c1e-2a4b6c8d0e1f".into(),
        };
        assert_eq!(key(&row), "students.0b6f1c9e-3f2a-4d7b-9c1e-2a4b6c8d0e1f");
        assert_eq!(parse(&key(&row), row.id.clone()), Some(row));
        assert_eq!(parse("no-dot", "default/x".into()), None);
        assert_eq!(parse("Not A Table.uid", "default/x".into()), None);
    }
}
