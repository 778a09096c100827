//! The desired state, as pure functions of what was observed: the copy and the status.

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::{Resource, ResourceExt};

use crate::api::{ConfigMapMirror, ConfigMapMirrorStatus, Phase};

/// The label that names the source on every copy, so that `kubectl get cm -l` finds the copies.
pub const SOURCE_LABEL: &str = "mirror.example.com/source";

/// The copy `mirror` asks for of `source`: its data and binary data, under the mirror's name, owned by
/// the mirror (as controller) so that the garbage collector deletes it with the mirror.
pub fn desired_copy(mirror: &ConfigMapMirror, source: &ConfigMap) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(mirror.name_any()),
            namespace: mirror.namespace(),
            labels: Some([(SOURCE_LABEL.to_owned(), mirror.spec.source.clone())].into()),
            owner_references: mirror.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..ConfigMap::default()
    }
}

/// Whether `existing` (a ConfigMap of the mirror's name) is the mirror's to write: its controller owner
/// reference names the mirror's uid.
pub fn owned_by(existing: &ConfigMap, mirror: &ConfigMapMirror) -> bool {
    let uid = mirror.uid();
    existing
        .owner_references()
        .iter()
        .any(|owner| owner.controller == Some(true) && Some(&owner.uid) == uid.as_ref())
}

/// The status after a reconcile that ended in `phase`, with `keys` copied.
pub fn status(mirror: &ConfigMapMirror, phase: Phase, keys: usize) -> ConfigMapMirrorStatus {
    let source = &mirror.spec.source;
    let message = match phase {
        Phase::Pending => "not reconciled yet".to_owned(),
        Phase::Synced => format!("holds the {keys} keys of ConfigMap {source}"),
        Phase::SourceMissing => {
            format!("ConfigMap {source} does not exist: the copy keeps what it last held")
        }
        Phase::CopyNotOwned => format!(
            "ConfigMap {} exists and is not this mirror's: delete or rename it",
            mirror.name_any()
        ),
    };
    ConfigMapMirrorStatus {
        observed_generation: mirror.metadata.generation,
        phase,
        message,
        keys,
    }
}

/// How many keys a ConfigMap holds, text and binary.
pub fn key_count(config_map: &ConfigMap) -> usize {
    config_map.data.as_ref().map_or(0, |d| d.len()) + config_map.binary_data.as_ref().map_or(0, |d| d.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ConfigMapMirrorSpec;

    fn mirror() -> ConfigMapMirror {
        let mut mirror = ConfigMapMirror::new(
            "copy",
            ConfigMapMirrorSpec {
                source: "settings".into(),
            },
        );
        mirror.metadata.namespace = Some("team".into());
        mirror.metadata.uid = Some("1234".into());
        mirror.metadata.generation = Some(3);
        mirror
    }

    fn source() -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                labels: Some([("not".to_owned(), "copied".to_owned())].into()),
                ..ObjectMeta::default()
            },
            data: Some([("color".to_owned(), "blue".to_owned())].into()),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn the_copy_has_the_source_data_under_the_mirror_name_owned_by_the_mirror() {
        let copy = desired_copy(&mirror(), &source());
        assert_eq!(copy.metadata.name.as_deref(), Some("copy"));
        assert_eq!(copy.metadata.namespace.as_deref(), Some("team"));
        assert_eq!(copy.data, source().data);
        let labels = copy.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(SOURCE_LABEL).map(String::as_str), Some("settings"));
        assert!(
            !labels.contains_key("not"),
            "the source's own labels are not copied"
        );
        assert!(owned_by(&copy, &mirror()));
    }

    #[test]
    fn a_config_map_without_the_mirror_as_controller_is_not_owned() {
        assert!(!owned_by(&source(), &mirror()));
    }

    #[test]
    fn the_status_records_the_generation_and_says_what_to_do() {
        let status = status(&mirror(), Phase::CopyNotOwned, 0);
        assert_eq!(status.observed_generation, Some(3));
        assert!(status.message.contains("delete or rename"), "{}", status.message);
    }
}
