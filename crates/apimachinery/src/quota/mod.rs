//! ResourceQuota semantics: the status kube-controller-manager's resourcequota controller computes
//! (`status.hard` from the spec, `status.used` measured over the namespace's objects), and the
//! ResourceQuota admission kube-apiserver runs on each create and update (a write that would take a
//! quota past its hard limit is refused, naming what it asked, what was used and the limit).
//!
//! Both read a quota's scopes (`spec.scopes` and `spec.scopeSelector`): a scoped quota counts only the
//! Pods in its scopes, and no other kind (see [`evaluators`]).

pub mod evaluators;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::quantity::Quantity;
pub use evaluators::{Evaluator, Operation};

/// Resource name -> amount, sorted by name as Go prints a resource list.
pub type ResourceList = BTreeMap<String, Quantity>;

/// One scope a quota is restricted to: `spec.scopes` entries are `Exists` requirements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The scope's name: `Terminating`, `BestEffort`, `PriorityClass` ...
    pub name: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values `In` and `NotIn` compare with; empty for the others.
    pub values: Vec<String>,
}

/// Adds `other` into `total`, name by name.
pub fn add_into(total: &mut ResourceList, other: &ResourceList) {
    for (name, value) in other {
        let sum = total.get(name).map_or(*value, |t| t.add(value));
        total.insert(name.clone(), sum);
    }
}

/// A resource list written in an object (`spec.hard`), its unparsable entries left out.
pub fn read_list(value: Option<&Value>) -> ResourceList {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, value)| Some((name.clone(), value.as_str().and_then(Quantity::parse)?)))
        .collect()
}

/// A resource list as the API writes it: each amount in its canonical form.
pub fn write_list(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(name, value)| (name.clone(), Value::from(value.to_string())))
            .collect::<Map<_, _>>(),
    )
}

/// `cpu=500m,memory=1Gi`, as the admission's refusals print a list.
fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The scopes of `quota`.
pub fn scopes(quota: &Value) -> Vec<Scope> {
    let named = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|name| Scope {
            name: name.to_owned(),
            operator: "Exists".into(),
            values: Vec::new(),
        });
    let selected = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|expression| Scope {
            name: text(expression, "scopeName"),
            operator: text(expression, "operator"),
            values: expression
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        });
    named.chain(selected).collect()
}

fn text(value: &Value, field: &str) -> String {
    value
        .get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The evaluators a quota limiting `names` needs: Pods, Services and claims, and one per other
/// resource it counts (`count/<plural>.<group>` or a legacy name).
pub fn evaluators_for<'n>(names: impl IntoIterator<Item = &'n str>) -> Vec<Evaluator> {
    let mut evaluators = vec![Evaluator::Pods, Evaluator::Services, Evaluator::Claims];
    for name in names {
        let counted = match name.strip_prefix("count/") {
            Some(resource) => resource
                .split_once('.')
                .map_or(("", resource), |(plural, group)| (group, plural)),
            None => match name {
                "configmaps" | "resourcequotas" | "replicationcontrollers" | "secrets" => ("", name),
                _ => continue,
            },
        };
        if let Some(evaluator) = Evaluator::of(counted.0, counted.1)
            && !evaluators.contains(&evaluator)
        {
            evaluators.push(evaluator);
        }
    }
    evaluators
}

/// The status the quota controller writes for `quota`: `hard` as the spec says, `used` measured for
/// each resource it limits that some evaluator measures (`list` gives the namespace's objects of a
/// group and resource); a limit nothing measures keeps the usage the status had.
pub fn status(quota: &Value, list: impl Fn(&str, &str) -> Vec<Value>, now: i64) -> Value {
    let hard = quota.pointer("/spec/hard").cloned().unwrap_or(Value::Null);
    let hard_list = read_list(Some(&hard));
    let names: Vec<&str> = hard_list.keys().map(String::as_str).collect();
    let scopes = scopes(quota);
    let mut used = read_list(quota.pointer("/status/used"));
    for evaluator in evaluators_for(names.iter().copied()) {
        let matched = evaluator.matching_resources(names.iter().copied());
        if matched.is_empty() {
            continue;
        }
        let mut measured: ResourceList = matched.iter().map(|n| (n.clone(), Quantity::zero())).collect();
        let (group, plural) = evaluator.resource();
        for object in list(group, plural) {
            if scopes.iter().all(|scope| evaluator.matches_scope(scope, &object)) {
                let usage = evaluator.usage(&object, now);
                let masked: ResourceList = usage.into_iter().filter(|(n, _)| matched.contains(n)).collect();
                add_into(&mut measured, &masked);
            }
        }
        used.extend(measured);
    }
    used.retain(|name, _| hard_list.contains_key(name));
    let mut status = Map::new();
    if hard.as_object().is_some_and(|h| !h.is_empty()) {
        status.insert("hard".into(), hard);
    }
    if !used.is_empty() {
        status.insert("used".into(), write_list(&used));
    }
    Value::Object(status)
}

/// One write, as the quota admission sees it.
pub struct Write<'a> {
    /// The evaluator of the written object's resource.
    pub evaluator: &'a Evaluator,
    /// Create or update; quota does not look at deletes.
    pub operation: Operation,
    /// The subresource written (`status`), if any.
    pub subresource: Option<&'a str>,
    /// The object as it would be stored.
    pub object: &'a Value,
    /// The stored object an update replaces: an update is charged only what it adds.
    pub old: Option<&'a Value>,
    /// The current time, in seconds since the Unix epoch: a Pod past its deletion grace period no
    /// longer counts its compute resources.
    pub now: i64,
}

/// Whether the namespace's `quotas` (as stored: their status is what they were last measured at)
/// let the write through; the refusal's text (after `<resource> "<name>" is forbidden: `) otherwise.
pub fn admit(quotas: &[Value], write: &Write<'_>) -> Result<(), String> {
    let evaluator = write.evaluator;
    if quotas.is_empty() || !evaluator.handles(write.operation, write.subresource, write.object, write.old) {
        return Ok(());
    }
    // The quotas this write concerns: each limits something the evaluator measures, and the object
    // is in all its scopes.
    let mut interesting = Vec::new();
    for quota in quotas {
        let hard = read_list(quota.pointer("/status/hard"));
        let restricted = evaluator.matching_resources(hard.keys().map(String::as_str));
        let in_scopes = scopes(quota)
            .iter()
            .all(|s| evaluator.matches_scope(s, write.object));
        if restricted.is_empty() || !in_scopes {
            continue;
        }
        let name = quota_name(quota);
        evaluator
            .constraints(&restricted, write.object)
            .map_err(|why| format!("failed quota: {name}: {why}"))?;
        let used = read_list(quota.pointer("/status/used"));
        if restricted.iter().any(|r| !used.contains_key(r)) {
            return Err(format!(
                "status unknown for quota: {name}, resources: {}",
                restricted.join(",")
            ));
        }
        interesting.push((quota, hard, used));
    }
    if interesting.is_empty() {
        return Ok(());
    }
    let usage = evaluator.usage(write.object, write.now);
    let negative: Vec<&str> = usage
        .iter()
        .filter(|(_, q)| q.is_negative())
        .map(|(n, _)| n.as_str())
        .collect();
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    for (quota, hard, used) in interesting {
        // An update is charged what it adds, where the old object was in the quota's scopes too.
        let old_in_scopes = write
            .old
            .filter(|_| write.operation == Operation::Update)
            .filter(|old| scopes(quota).iter().all(|s| evaluator.matches_scope(s, old)));
        let delta: ResourceList = match old_in_scopes {
            Some(old) => {
                let before = evaluator.usage(old, write.now);
                usage
                    .iter()
                    .map(|(name, value)| {
                        let more = before.get(name).map_or(*value, |b| value.sub(b));
                        (
                            name.clone(),
                            if more.is_negative() {
                                Quantity::zero()
                            } else {
                                more
                            },
                        )
                    })
                    .collect()
            }
            None => usage.clone(),
        };
        let requested: ResourceList = delta
            .into_iter()
            .filter(|(name, value)| !value.is_zero() && hard.contains_key(name))
            .collect();
        let exceeded: Vec<&String> = requested
            .iter()
            .filter(|(name, value)| {
                let after = used.get(*name).map_or(**value, |u| u.add(value));
                hard.get(*name).is_some_and(|limit| after > *limit)
            })
            .map(|(name, _)| name)
            .collect();
        if !exceeded.is_empty() {
            let only = |list: &ResourceList| -> ResourceList {
                list.iter()
                    .filter(|(name, _)| exceeded.contains(name))
                    .map(|(n, v)| (n.clone(), *v))
                    .collect()
            };
            return Err(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                quota_name(quota),
                pretty(&only(&requested)),
                pretty(&only(&used)),
                pretty(&only(&hard))
            ));
        }
    }
    Ok(())
}

fn quota_name(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(cpu: &str) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]}})
    }

    fn measured(quota: &Value, pods: &[Value]) -> Value {
        let mut quota = quota.clone();
        quota["status"] = status(
            &quota,
            |group, plural| match (group, plural) {
                ("", "pods") => pods.to_vec(),
                ("", "resourcequotas") => vec![json!({})],
                _ => Vec::new(),
            },
            0,
        );
        quota
    }

    #[test]
    fn the_status_measures_each_limited_resource_from_zero() {
        let quota = json!({"metadata": {"name": "q"},
            "spec": {"hard": {"pods": "5", "cpu": "1", "memory": "500Mi", "resourcequotas": "1", "unknown": "3"}}});
        let quota = measured(&quota, &[pod("500m")]);
        assert_eq!(quota["status"]["hard"], quota["spec"]["hard"]);
        assert_eq!(
            quota["status"]["used"],
            json!({"pods": "1", "cpu": "500m", "memory": "100Mi", "resourcequotas": "1"})
        );
        let empty = measured(&json!({"spec": {"hard": {"pods": "5"}}}), &[]);
        assert_eq!(empty["status"]["used"], json!({"pods": "0"}));
    }

    #[test]
    fn a_scoped_quota_counts_only_the_pods_in_its_scopes() {
        let quota =
            json!({"spec": {"hard": {"pods": "5", "count/configmaps": "5"}, "scopes": ["Terminating"]}});
        let mut ending = pod("1");
        ending["spec"]["activeDeadlineSeconds"] = json!(30);
        let quota = measured(&quota, &[pod("1"), ending]);
        assert_eq!(
            quota["status"]["used"],
            json!({"pods": "1", "count/configmaps": "0"})
        );
    }

    #[test]
    fn a_create_past_a_limit_is_refused_naming_request_usage_and_limit() {
        let quota = json!({"metadata": {"name": "test-quota"}, "spec": {"hard": {"cpu": "1", "memory": "500Mi", "pods": "5"}}});
        let quota = measured(&quota, &[pod("500m")]);
        let write = |object: &Value| -> Result<(), String> {
            admit(
                std::slice::from_ref(&quota),
                &Write {
                    evaluator: &Evaluator::Pods,
                    operation: Operation::Create,
                    subresource: None,
                    object,
                    old: None,
                    now: 0,
                },
            )
        };
        assert_eq!(write(&pod("500m")), Ok(()));
        assert_eq!(
            write(&pod("600m")).unwrap_err(),
            "exceeded quota: test-quota, requested: cpu=600m, used: cpu=500m, limited: cpu=1"
        );
        let bare = json!({"spec": {"containers": [{"name": "c"}]}});
        assert_eq!(
            write(&bare).unwrap_err(),
            "failed quota: test-quota: must specify cpu for: c; memory for: c"
        );
    }

    #[test]
    fn a_quota_not_yet_measured_refuses_what_it_limits() {
        let quota = json!({"metadata": {"name": "q"}, "spec": {"hard": {"configmaps": "1"}},
            "status": {"hard": {"configmaps": "1"}}});
        let counted = Evaluator::of("", "configmaps").expect("counted");
        let refused = admit(
            &[quota],
            &Write {
                evaluator: &counted,
                operation: Operation::Create,
                subresource: None,
                object: &json!({}),
                old: None,
                now: 0,
            },
        );
        assert_eq!(
            refused.unwrap_err(),
            "status unknown for quota: q, resources: configmaps"
        );
    }
}
