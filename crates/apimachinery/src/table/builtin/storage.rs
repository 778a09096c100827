//! Volumes and what provides them: PersistentVolumes and their claims, StorageClasses, and the CSI
//! kinds (drivers, nodes, volume attachments). kube-apiserver prints CSIStorageCapacities with the
//! default columns (Name, Created At): their storage uses the default table, not the printer.

use serde_json::{Value, json};

use super::{AGE, BuiltInTable, Column, Doc, NAME, column, fields, wide};

const fn typed(name: &'static str, column_type: &'static str, doc: Doc) -> Column {
    Column {
        column_type,
        ..column(name, doc)
    }
}

/// The annotation that named a volume's class before `storageClassName`, and still wins over it.
const BETA_CLASS: &str = "volume.beta.kubernetes.io~1storage-class";

/// `GetAccessModesAsString`: each mode once, in this order, whatever order they were given in.
fn access_modes(o: &Value, pointer: &str) -> String {
    let modes: Vec<&str> = fields::items(o, pointer)
        .iter()
        .filter_map(Value::as_str)
        .collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The class of a volume or claim: the beta annotation's, else `spec.storageClassName`.
fn storage_class(o: &Value) -> &str {
    match o.pointer(&format!("/metadata/annotations/{BETA_CLASS}")) {
        Some(Value::String(class)) => class,
        _ => fields::text(o, "/spec/storageClassName"),
    }
}

/// The phase, or `Terminating` once the object is being deleted.
fn phase(o: &Value) -> &str {
    if o.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        "Terminating"
    } else {
        fields::text(o, "/status/phase")
    }
}

const VOLUME_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeSpec";
const VOLUME_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeStatus";

pub static PERSISTENT_VOLUME: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Capacity", Doc::Field(VOLUME_SPEC, "capacity")),
        column("Access Modes", Doc::Field(VOLUME_SPEC, "accessModes")),
        column(
            "Reclaim Policy",
            Doc::Field(VOLUME_SPEC, "persistentVolumeReclaimPolicy"),
        ),
        column("Status", Doc::Field(VOLUME_STATUS, "phase")),
        column("Claim", Doc::Field(VOLUME_SPEC, "claimRef")),
        column("StorageClass", Doc::Text("StorageClass of the pv")),
        column(
            "VolumeAttributesClass",
            Doc::Text("VolumeAttributesClass of the pv"),
        ),
        column("Reason", Doc::Field(VOLUME_STATUS, "reason")),
        AGE,
        wide("VolumeMode", Doc::Field(VOLUME_SPEC, "volumeMode")),
    ],
    cells: persistent_volume,
};

fn persistent_volume(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let claim = match o.pointer("/spec/claimRef") {
        Some(claim) if claim.is_object() => format!(
            "{}/{}",
            fields::text(claim, "/namespace"),
            fields::text(claim, "/name")
        ),
        _ => String::new(),
    };
    vec![
        fields::name(o),
        json!(fields::quantity(o, "/spec/capacity/storage")),
        json!(access_modes(o, "/spec/accessModes")),
        json!(fields::text(o, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase(o)),
        json!(claim),
        json!(storage_class(o)),
        json!(fields::text_or(o, "/spec/volumeAttributesClassName", "<unset>")),
        json!(fields::text(o, "/status/reason")),
        fields::age(o, now),
        json!(fields::text_or(o, "/spec/volumeMode", "<unset>")),
    ]
}

const CLAIM_SPEC: &str = "io.k8s.api.core.v1.PersistentVolumeClaimSpec";
const CLAIM_STATUS: &str = "io.k8s.api.core.v1.PersistentVolumeClaimStatus";

pub static PERSISTENT_VOLUME_CLAIM: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Status", Doc::Field(CLAIM_STATUS, "phase")),
        column("Volume", Doc::Field(CLAIM_SPEC, "volumeName")),
        column("Capacity", Doc::Field(CLAIM_STATUS, "capacity")),
        column("Access Modes", Doc::Field(CLAIM_STATUS, "accessModes")),
        column("StorageClass", Doc::Text("StorageClass of the pvc")),
        column(
            "VolumeAttributesClass",
            Doc::Text("VolumeAttributesClass of the pvc"),
        ),
        AGE,
        wide("VolumeMode", Doc::Field(CLAIM_SPEC, "volumeMode")),
    ],
    cells: persistent_volume_claim,
};

fn persistent_volume_claim(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let volume = fields::text(o, "/spec/volumeName");
    // Capacity and access modes are the bound volume's: none before the claim is bound.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            fields::quantity(o, "/status/capacity/storage"),
            access_modes(o, "/status/accessModes"),
        )
    };
    vec![
        fields::name(o),
        json!(phase(o)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(storage_class(o)),
        json!(fields::text_or(o, "/spec/volumeAttributesClassName", "<unset>")),
        fields::age(o, now),
        json!(fields::text_or(o, "/spec/volumeMode", "<unset>")),
    ]
}

const STORAGE_CLASS: &str = "io.k8s.api.storage.v1.StorageClass";

pub static STORAGE_CLASS_TABLE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        column("Provisioner", Doc::Field(STORAGE_CLASS, "provisioner")),
        column("ReclaimPolicy", Doc::Field(STORAGE_CLASS, "reclaimPolicy")),
        column(
            "VolumeBindingMode",
            Doc::Field(STORAGE_CLASS, "volumeBindingMode"),
        ),
        column(
            "AllowVolumeExpansion",
            Doc::Field(STORAGE_CLASS, "allowVolumeExpansion"),
        ),
        AGE,
    ],
    cells: storage_class_cells,
};

/// Whether a class is marked the default, by its annotation or the beta one.
fn is_default_class(o: &Value) -> bool {
    [
        "/metadata/annotations/storageclass.kubernetes.io~1is-default-class",
        "/metadata/annotations/storageclass.beta.kubernetes.io~1is-default-class",
    ]
    .iter()
    .any(|pointer| fields::text(o, pointer) == "true")
}

fn storage_class_cells(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut name = fields::text(o, "/metadata/name").to_owned();
    if is_default_class(o) {
        name.push_str(" (default)");
    }
    vec![
        json!(name),
        json!(fields::text(o, "/provisioner")),
        json!(fields::text_or(o, "/reclaimPolicy", "Delete")),
        json!(fields::text_or(o, "/volumeBindingMode", "Immediate")),
        json!(fields::flag(o, "/allowVolumeExpansion", false)),
        fields::age(o, now),
    ]
}

const DRIVER_SPEC: &str = "io.k8s.api.storage.v1.CSIDriverSpec";

pub static CSI_DRIVER: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        typed(
            "AttachRequired",
            "boolean",
            Doc::Field(DRIVER_SPEC, "attachRequired"),
        ),
        typed(
            "PodInfoOnMount",
            "boolean",
            Doc::Field(DRIVER_SPEC, "podInfoOnMount"),
        ),
        typed(
            "StorageCapacity",
            "boolean",
            Doc::Field(DRIVER_SPEC, "storageCapacity"),
        ),
        column("TokenRequests", Doc::Field(DRIVER_SPEC, "tokenRequests")),
        typed(
            "RequiresRepublish",
            "boolean",
            Doc::Field(DRIVER_SPEC, "requiresRepublish"),
        ),
        column("Modes", Doc::Field(DRIVER_SPEC, "volumeLifecycleModes")),
        AGE,
    ],
    cells: csi_driver,
};

fn csi_driver(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let modes: Vec<&str> = fields::items(o, "/spec/volumeLifecycleModes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let modes = if modes.is_empty() {
        "<none>".to_owned()
    } else {
        modes.join(",")
    };
    let token_requests = match o.pointer("/spec/tokenRequests") {
        Some(Value::Array(requests)) => requests
            .iter()
            .map(|r| fields::text(r, "/audience"))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<unset>".to_owned(),
    };
    vec![
        fields::name(o),
        json!(fields::flag(o, "/spec/attachRequired", true)),
        json!(fields::flag(o, "/spec/podInfoOnMount", false)),
        json!(fields::flag(o, "/spec/storageCapacity", false)),
        json!(token_requests),
        json!(fields::flag(o, "/spec/requiresRepublish", false)),
        json!(modes),
        fields::age(o, now),
    ]
}

pub static CSI_NODE: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        typed(
            "Drivers",
            "integer",
            Doc::Text("Drivers indicates the number of CSI drivers registered on the node"),
        ),
        AGE,
    ],
    cells: csi_node,
};

fn csi_node(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(fields::count(o, "/spec/drivers")),
        fields::age(o, now),
    ]
}

pub static VOLUME_ATTACHMENT: BuiltInTable = BuiltInTable {
    columns: &[
        NAME,
        Column {
            format: "name",
            ..column(
                "Attacher",
                Doc::Field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "attacher"),
            )
        },
        column(
            "PV",
            Doc::Field(
                "io.k8s.api.storage.v1.VolumeAttachmentSource",
                "persistentVolumeName",
            ),
        ),
        column(
            "Node",
            Doc::Field("io.k8s.api.storage.v1.VolumeAttachmentSpec", "nodeName"),
        ),
        typed(
            "Attached",
            "boolean",
            Doc::Field("io.k8s.api.storage.v1.VolumeAttachmentStatus", "attached"),
        ),
        AGE,
    ],
    cells: volume_attachment,
};

fn volume_attachment(o: &Value, now: jiff::Timestamp) -> Vec<Value> {
    vec![
        fields::name(o),
        json!(fields::text(o, "/spec/attacher")),
        json!(fields::text(o, "/spec/source/persistentVolumeName")),
        json!(fields::text(o, "/spec/nodeName")),
        json!(fields::flag(o, "/status/attached", false)),
        fields::age(o, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_volume_and_claim_cells_show_capacity_modes_and_claim() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let volume = json!({"metadata": {"name": "pv1"}, "spec": {
            "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "ns", "name": "data"},
            "storageClassName": "fast", "volumeMode": "Filesystem"}, "status": {"phase": "Bound"}});
        assert_eq!(
            (PERSISTENT_VOLUME.cells)(&volume, now),
            [
                json!("pv1"),
                json!("10Gi"),
                json!("RWO,RWX"),
                json!("Retain"),
                json!("Bound"),
                json!("ns/data"),
                json!("fast"),
                json!("<unset>"),
                json!(""),
                json!("<unknown>"),
                json!("Filesystem")
            ]
        );
        let pending = json!({"metadata": {"name": "data",
                "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}});
        assert_eq!(
            (PERSISTENT_VOLUME_CLAIM.cells)(&pending, now)[1..7],
            [
                json!("Pending"),
                json!(""),
                json!(""),
                json!(""),
                json!("old"),
                json!("<unset>")
            ]
        );
        let bound = json!({"metadata": {"name": "data", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"volumeName": "pv1"},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadOnlyMany"]}});
        assert_eq!(
            (PERSISTENT_VOLUME_CLAIM.cells)(&bound, now)[1..5],
            [json!("Terminating"), json!("pv1"), json!("10Gi"), json!("ROX")]
        );
    }

    #[test]
    fn t1_storage_class_and_csi_cells_fill_in_go_defaults() {
        let now = jiff::Timestamp::UNIX_EPOCH;
        let class = json!({"metadata": {"name": "fast",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "csi.example.com"});
        assert_eq!(
            (STORAGE_CLASS_TABLE.cells)(&class, now),
            [
                json!("fast (default)"),
                json!("csi.example.com"),
                json!("Delete"),
                json!("Immediate"),
                json!(false),
                json!("<unknown>")
            ]
        );
        let driver = json!({"metadata": {"name": "csi.example.com"},
            "spec": {"tokenRequests": [{"audience": "a"}, {"audience": "b"}],
                "volumeLifecycleModes": ["Persistent", "Ephemeral"]}});
        assert_eq!(
            (CSI_DRIVER.cells)(&driver, now)[1..7],
            [
                json!(true),
                json!(false),
                json!(false),
                json!("a,b"),
                json!(false),
                json!("Persistent,Ephemeral")
            ]
        );
        assert_eq!((CSI_DRIVER.cells)(&json!({}), now)[4], json!("<unset>"));
        let node = json!({"metadata": {"name": "n"}, "spec": {"drivers": [{"name": "a"}]}});
        assert_eq!((CSI_NODE.cells)(&node, now)[1], json!(1));
        let attachment = json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com",
            "source": {"persistentVolumeName": "pv1"}, "nodeName": "n1"}, "status": {"attached": true}});
        assert_eq!(
            (VOLUME_ATTACHMENT.cells)(&attachment, now)[1..5],
            [json!("csi.example.com"), json!("pv1"), json!("n1"), json!(true)]
        );
    }
}
