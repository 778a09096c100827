//! VoteConfig: the options become a ConfigMap `<name>-config` (key `options.txt`, one `id:label:color`
//! line per option; key `question.txt` when a question is set), owned by the VoteConfig, kept in sync and repaired when edited or deleted by hand.
//! A same-named ConfigMap that someone else owns is never taken over.

use std::collections::BTreeMap;

use k8s_openapi::{api::core::v1::ConfigMap, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use kube::{
    Resource, ResourceExt,
    runtime::{controller::Action, events::EventType},
};

use super::{
    conditions::{find_ready, now_rfc3339, ready_condition},
    drift::holds_all,
    ownership::{children_of, controlled_by, controller_reference, managed_by, not_owned_message},
};
use crate::{
    Error, Result,
    api::vote_config::{VoteConfig, VoteConfigSpec, VoteConfigStatus},
    runtime::{Cache, ControllerContext, Reconciler, Toolkit, Watches},
};

pub const NAME: &str = "vote-config";
const DATA_KEY: &str = "options.txt";
const QUESTION_KEY: &str = "question.txt";

/// Runs the controller until shutdown.
pub async fn run(ctx: ControllerContext) -> Result<()> {
    let mut watches = Watches::new(&ctx);
    // Only ConfigMaps labelled `app.kubernetes.io/managed-by=vote-config`, which every ConfigMap of
    // ours has carried since the first release: the cache holds ours, not the cluster's.
    let config_maps = watches.owns(children_of(NAME));
    crate::runtime::run_with(ctx, VoteConfigs { config_maps }, watches).await
}

struct VoteConfigs {
    config_maps: Cache<ConfigMap>,
}

impl Reconciler for VoteConfigs {
    type Object = VoteConfig;
    const NAME: &'static str = NAME;

    async fn apply(&self, vote_config: &VoteConfig, kit: &Toolkit) -> Result<Action> {
        reconcile_config_map(vote_config, &self.config_maps, kit).await
    }
}

pub fn config_map_name(vote_config: &VoteConfig) -> String {
    format!("{}-config", vote_config.name_any())
}

/// `id:label:color` lines, in spec order, each ending in a newline. An option without a color gets the
/// palette pick the defaulting webhook would have written.
pub fn options_txt(spec: &VoteConfigSpec) -> String {
    spec.options
        .iter()
        .zip(spec.colors())
        .map(|(o, color)| format!("{}:{}:{color}\n", o.id, o.label))
        .collect()
}

/// The ConfigMap the VoteConfig asks for.
pub fn desired_config_map(vote_config: &VoteConfig) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(vote_config)),
            namespace: vote_config.namespace(),
            labels: Some(managed_by(NAME)),
            owner_references: controller_reference(vote_config),
            ..Default::default()
        },
        data: Some(desired_data(&vote_config.spec)),
        ..Default::default()
    }
}

/// The ConfigMap's keys: a VoteConfig without a question has the options alone, as before questions
/// existed, so that its ConfigMap did not change when the operator learnt about them.
fn desired_data(spec: &VoteConfigSpec) -> BTreeMap<String, String> {
    let mut data = BTreeMap::from([(DATA_KEY.to_owned(), options_txt(spec))]);
    if let Some(question) = &spec.question {
        data.insert(QUESTION_KEY.to_owned(), format!("{question}\n"));
    }
    data
}

/// Whether the live ConfigMap already has what we set: our data key, our label and our controller
/// reference. Keys someone else added are theirs (see [`super::drift`]).
fn matches_desired(live: &ConfigMap, desired: &ConfigMap) -> bool {
    holds_all(
        live.data.as_ref(),
        desired.data.as_ref().unwrap_or(&BTreeMap::new()),
    ) && holds_all(live.metadata.labels.as_ref(), desired.labels())
        && desired
            .owner_references()
            .iter()
            .all(|r| live.owner_references().contains(r))
}

async fn reconcile_config_map(
    vote_config: &VoteConfig,
    config_maps: &Cache<ConfigMap>,
    kit: &Toolkit,
) -> Result<Action> {
    let name = config_map_name(vote_config);
    let generation = vote_config.meta().generation;
    let previous = vote_config.status.clone().unwrap_or_default();
    let desired = desired_config_map(vote_config);

    // Observe: from the cache when it shows our ConfigMap as the spec asks, else from the API server.
    let live = config_maps
        .current(vote_config, &name, |cached| {
            controlled_by(cached, vote_config) && matches_desired(cached, &desired)
        })
        .await?;

    // Compare: someone else's ConfigMap is never taken over.
    if let Some(live) = &live
        && !controlled_by(live, vote_config)
    {
        let message = not_owned_message("ConfigMap", &name, "VoteConfig");
        kit.report_not_ready(vote_config, "ConfigMapNotOwned", message.clone())
            .await?;
        return Err(Error::NotOwned(message));
    }

    // Act: only when the ConfigMap differs from what the spec asks.
    let changed = !live.as_ref().is_some_and(|live| matches_desired(live, &desired));
    if changed {
        kit.apply(&desired).await?;
        let verb = if live.is_some() { "Updated" } else { "Created" };
        kit.publish(
            vote_config,
            EventType::Normal,
            verb,
            format!("ConfigMap {name} {}", verb.to_lowercase()),
        );
    }
    let status = VoteConfigStatus {
        config_map_name: Some(name.clone()),
        last_updated: if changed || previous.last_updated.is_none() {
            Some(now_rfc3339())
        } else {
            previous.last_updated.clone()
        },
        option_count: Some(vote_config.spec.options.len() as i64),
        observed_generation: generation,
        conditions: vec![ready_condition(
            true,
            "Synced",
            &format!("ConfigMap {name} holds the options"),
            find_ready(&previous.conditions),
            generation,
        )],
    };
    kit.write_status(vote_config, status).await?;
    // Drift is repaired by the controller's periodic resync of every object.
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::vote_config::VoteOption;

    fn option(id: &str, label: &str, color: Option<&str>) -> VoteOption {
        VoteOption {
            id: id.into(),
            label: label.into(),
            color: color.map(Into::into),
        }
    }

    fn vote_config() -> VoteConfig {
        let mut vc = VoteConfig::new(
            "pets",
            VoteConfigSpec {
                question: None,
                options: vec![
                    option("a", "Cats", Some("#FF6B6B")),
                    option("b", "Dogs", Some("#4ECDC4")),
                ],
            },
        );
        vc.metadata.namespace = Some("default".into());
        vc.metadata.uid = Some("uid-1".into());
        vc
    }

    #[test]
    fn options_txt_is_one_line_per_option_in_spec_order() {
        assert_eq!(
            options_txt(&vote_config().spec),
            "a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\n"
        );
    }

    #[test]
    fn an_option_without_a_color_gets_an_unused_palette_color_and_a_question_its_own_key() {
        let mut vc = vote_config();
        vc.spec.options.push(option("c", "Birds", None));
        vc.spec.question = Some("Which pet?".into());
        let data = desired_data(&vc.spec);
        assert_eq!(
            data[DATA_KEY],
            "a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\nc:Birds:#E6194B\n"
        );
        assert_eq!(data[QUESTION_KEY], "Which pet?\n");
        assert_eq!(desired_data(&vote_config().spec).len(), 1, "no question, no key");
    }

    #[test]
    fn desired_config_map_is_named_after_and_controlled_by_the_vote_config() {
        let vc = vote_config();
        let cm = desired_config_map(&vc);
        assert_eq!(cm.metadata.name.as_deref(), Some("pets-config"));
        assert_eq!(
            cm.data.as_ref().unwrap()[DATA_KEY],
            "a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\n"
        );
        assert!(controlled_by(&cm, &vc));
        assert!(matches_desired(&cm, &cm));
    }

    #[test]
    fn a_config_map_matches_while_our_key_label_and_owner_are_there_whatever_else_is() {
        let desired = desired_config_map(&vote_config());
        let mut live = desired.clone();
        live.data
            .get_or_insert_default()
            .insert("extra".into(), "added by hand".into());
        live.metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "x".into());
        assert!(matches_desired(&live, &desired), "additions are someone else's");

        let mut edited = live.clone();
        edited.data = Some(BTreeMap::from([(DATA_KEY.to_owned(), "x".to_owned())]));
        assert!(!matches_desired(&edited, &desired), "our key edited");
        let mut removed = live.clone();
        removed.data.get_or_insert_default().remove(DATA_KEY);
        assert!(!matches_desired(&removed, &desired), "our key removed");
        let mut unlabelled = live.clone();
        unlabelled.metadata.labels = None;
        assert!(!matches_desired(&unlabelled, &desired), "our label removed");
    }
}
