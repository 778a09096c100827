//! The admission stages that call out: the mutating webhooks, then the admission policies and the
//! validating webhooks, as kube-apiserver's admission chain runs them.

use super::{
    Attributes, call,
    matching::{self, Phase},
    policies,
};
use crate::{error::Result, store::Store};

/// Runs the mutating webhooks in order, each patch applied before the next call, then once more
/// those with `reinvocationPolicy: IfNeeded` that ran before a later webhook changed the object (A8).
/// Returns whether the object changed.
pub(super) async fn mutate(
    store: &Store,
    attributes: &mut Attributes,
    warnings: &mut Vec<String>,
) -> Result<bool> {
    let webhooks = matching::webhooks(store, Phase::Mutating, attributes);
    let mut changed_by: Option<usize> = None;
    for (index, webhook) in webhooks.iter().enumerate() {
        if apply(store, webhook, attributes, warnings).await? {
            changed_by = Some(index);
        }
    }
    let Some(last_change) = changed_by else {
        return Ok(false);
    };
    for webhook in webhooks[..last_change].iter().filter(|w| w.reinvoked_if_needed()) {
        apply(store, webhook, attributes, warnings).await?;
    }
    Ok(true)
}

/// One mutating call; whether it changed the object.
async fn apply(
    store: &Store,
    webhook: &matching::Matched,
    attributes: &mut Attributes,
    warnings: &mut Vec<String>,
) -> Result<bool> {
    let mut allowed = call::call(store, webhook, attributes).await?;
    warnings.append(&mut allowed.warnings);
    match allowed.patched {
        Some(patched) if attributes.object.as_ref() != Some(&patched) => {
            attributes.object = Some(patched);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Evaluates the bound admission policies, then runs the validating webhooks concurrently, as the
/// real server does; the first refusal in their order is the answer.
pub(super) async fn validate(
    store: &Store,
    attributes: &Attributes,
    warnings: &mut Vec<String>,
) -> Result<()> {
    policies::validate(store, attributes, warnings)?;
    let webhooks = matching::webhooks(store, Phase::Validating, attributes);
    let verdicts = futures::future::join_all(
        webhooks
            .iter()
            .map(|webhook| call::call(store, webhook, attributes)),
    )
    .await;
    for verdict in verdicts {
        warnings.append(&mut verdict?.warnings);
    }
    Ok(())
}
