//! VoteConfig: the options become a ConfigMap `<name>-config` (key `options.txt`, one `id:label:color`
//! line per option), owned by the VoteConfig, kept in sync and repaired when edited or deleted by hand.
//! A same-named ConfigMap that someone else owns is never taken over.

use std::{collections::BTreeMap, sync::Arc};

use k8s_openapi::{
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::{controller::Action, events::EventType, watcher},
};
use serde_json::json;

use super::{
    ControllerContext, ReconcileRuntime,
    conditions::{find_ready, now_rfc3339, ready_condition},
    drift::holds_all,
    events::EventPublisher,
    ownership::{controlled_by, not_owned_message},
};
use crate::{
    Error, Result,
    api::vote_config::{VoteConfig, VoteConfigStatus, VoteOption},
    manager::backoff::Backoff,
};

pub const NAME: &str = "vote-config";
const FIELD_MANAGER: &str = "vote-config";
const DATA_KEY: &str = "options.txt";

struct Context {
    client: kube::Client,
    runtime: ReconcileRuntime,
    events: EventPublisher,
}

pub async fn run(ctx: ControllerContext) -> Result<()> {
    let runtime = ReconcileRuntime::new(NAME, ctx.metrics.clone(), Backoff::default());
    let controller = ctx
        .controller(
            Api::<VoteConfig>::all(ctx.client.clone()),
            &runtime,
            super::Triggers::EveryChange,
        )
        .owns(
            Api::<ConfigMap>::all(ctx.client.clone()),
            watcher::Config::default(),
        );
    let context = Arc::new(Context {
        client: ctx.client.clone(),
        runtime: runtime.clone(),
        events: ctx.events(NAME),
    });
    super::drain(
        &runtime,
        ctx.configure(NAME, controller)
            .run(reconcile, error_policy, context),
    )
    .await;
    Ok(())
}

pub fn config_map_name(vote_config: &VoteConfig) -> String {
    format!("{}-config", vote_config.name_any())
}

/// `id:label:color` lines, in spec order, each ending in a newline.
pub fn options_txt(options: &[VoteOption]) -> String {
    options
        .iter()
        .map(|o| format!("{}:{}:{}\n", o.id, o.label, o.color))
        .collect()
}

fn owner_reference(vote_config: &VoteConfig) -> OwnerReference {
    OwnerReference {
        api_version: "voting.schoolofdevops.com/v1alpha1".into(),
        kind: "VoteConfig".into(),
        name: vote_config.name_any(),
        uid: vote_config.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The ConfigMap the VoteConfig asks for.
pub fn desired_config_map(vote_config: &VoteConfig) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(vote_config)),
            namespace: vote_config.namespace(),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".into(),
                "vote-config".into(),
            )])),
            owner_references: Some(vec![owner_reference(vote_config)]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            DATA_KEY.to_owned(),
            options_txt(&vote_config.spec.options),
        )])),
        ..Default::default()
    }
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

async fn reconcile(vote_config: Arc<VoteConfig>, ctx: Arc<Context>) -> Result<Action> {
    let key = super::object_key(vote_config.as_ref());
    ctx.runtime
        .instrument(&key, reconcile_config_map(&vote_config, &ctx))
        .await
}

fn error_policy(vote_config: Arc<VoteConfig>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.runtime
        .error_action(&super::object_key(vote_config.as_ref()), error)
}

async fn write_status(ctx: &Context, vote_config: &VoteConfig, status: VoteConfigStatus) -> Result<()> {
    if vote_config.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let api: Api<VoteConfig> =
        Api::namespaced(ctx.client.clone(), &vote_config.namespace().unwrap_or_default());
    let body =
        json!({"apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig", "status": status});
    api.patch_status(
        &vote_config.name_any(),
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await?;
    Ok(())
}

async fn reconcile_config_map(vote_config: &VoteConfig, ctx: &Context) -> Result<Action> {
    let namespace = vote_config.namespace().unwrap_or_default();
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let name = config_map_name(vote_config);
    let generation = vote_config.meta().generation;
    let previous = vote_config.status.clone().unwrap_or_default();

    // Observe.
    let live = config_maps.get_opt(&name).await?;

    // Compare: someone else's ConfigMap is never taken over.
    if let Some(live) = &live
        && !controlled_by(live, vote_config)
    {
        let message = not_owned_message("ConfigMap", &name, "VoteConfig");
        let status = VoteConfigStatus {
            observed_generation: generation,
            conditions: vec![ready_condition(
                false,
                "ConfigMapNotOwned",
                &message,
                find_ready(&previous.conditions),
                generation,
            )],
            ..previous.clone()
        };
        if vote_config.status.as_ref() != Some(&status) {
            ctx.events.publish(
                vote_config.object_ref(&()),
                EventType::Warning,
                "ConfigMapNotOwned",
                message.clone(),
            );
        }
        write_status(ctx, vote_config, status).await?;
        return Err(Error::NotOwned(message));
    }

    // Act: only when the ConfigMap differs from what the spec asks.
    let desired = desired_config_map(vote_config);
    let changed = !live.as_ref().is_some_and(|live| matches_desired(live, &desired));
    if changed {
        config_maps
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&desired),
            )
            .await?;
        let verb = if live.is_some() { "Updated" } else { "Created" };
        ctx.events.publish(
            vote_config.object_ref(&()),
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
    write_status(ctx, vote_config, status).await?;
    // Drift is repaired by the controller's periodic resync of every object.
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::vote_config::VoteConfigSpec;

    fn vote_config() -> VoteConfig {
        let option = |id: &str, label: &str, color: &str| VoteOption {
            id: id.into(),
            label: label.into(),
            color: color.into(),
        };
        let mut vc = VoteConfig::new(
            "pets",
            VoteConfigSpec {
                options: vec![option("a", "Cats", "#FF6B6B"), option("b", "Dogs", "#4ECDC4")],
            },
        );
        vc.metadata.namespace = Some("default".into());
        vc.metadata.uid = Some("uid-1".into());
        vc
    }

    #[test]
    fn options_txt_is_one_line_per_option_in_spec_order() {
        assert_eq!(
            options_txt(&vote_config().spec.options),
            "a:Cats:#FF6B6B\nb:Dogs:#4ECDC4\n"
        );
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
