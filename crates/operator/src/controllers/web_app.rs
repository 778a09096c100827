//! WebApp: image, replicas and port become a Deployment and a Service named after the WebApp, owned by
//! it and selecting `app=<name>`; drift is repaired, and status.phase follows the Deployment's readiness.
//! The Deployment, the Service and the pods carry `app.kubernetes.io/managed-by=web-app` too, and the
//! controller watches only what carries that label: its memory grows with the WebApps, not with the
//! cluster's other workloads (most of which carry an `app` label).
//! Deletion needs no operator: the owner references let the API server's garbage collector delete the
//! children, so no finalizer holds a WebApp (the one earlier versions added is removed on sight).
//! While fewer replicas are ready than asked, the pods are looked at too: a container that cannot
//! start (an image that cannot be pulled, a crash loop) turns the phase to Failed, with the kubelet's
//! reason and message in the Ready condition and a Warning Event, so the user sees what to fix.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        apps::v1::{Deployment, DeploymentSpec},
        core::v1::{
            Container, ContainerPort, ContainerStatus, Pod, PodSpec, PodStatus, PodTemplateSpec, Service,
            ServicePort, ServiceSpec,
        },
    },
    apimachinery::pkg::{
        apis::meta::v1::{LabelSelector, ObjectMeta},
        util::intstr::IntOrString,
    },
};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams},
    runtime::{controller::Action, events::EventType, reflector::ObjectRef},
};
use serde_json::json;

use super::{
    conditions::{find_ready, ready_condition},
    drift::holds_all,
    ownership::{children_of, controlled_by, controller_reference, managed_by, not_owned_message},
};
use crate::{
    Error, Result,
    api::web_app::{LEGACY_FINALIZER, WebApp, WebAppStatus},
    runtime::{Cache, ControllerContext, Reconciler, Toolkit, Watches},
};

pub const NAME: &str = "web-app";
/// The name of our container in the Deployment's pods, and of our port in the Service.
const CONTAINER: &str = "web";
const PORT_NAME: &str = "http";

/// Runs the controller until shutdown.
pub async fn run(ctx: ControllerContext) -> Result<()> {
    let mut watches = Watches::new(&ctx);
    // Only objects labelled managed-by=web-app are watched and cached (see ownership::MANAGED_BY). A
    // same-named child without the label, someone else's or one an earlier version made, is found
    // when a reconcile looks it up: ours is labelled then (adopted), someone else's refused.
    let web_apps = WebApps {
        deployments: watches.owns(children_of(NAME)),
        services: watches.owns(children_of(NAME)),
        // A pod's container that cannot start changes no Deployment field until its progress
        // deadline (ten minutes): the pods themselves tell at once. Their cache keeps only what
        // that needs (see `as_cached`).
        pods: watches.watches_trimmed(children_of(NAME), as_cached, |pod: Pod| {
            let name = pod.labels().get(APP_LABEL)?.clone();
            Some(ObjectRef::new(&name).within(&pod.namespace()?))
        }),
    };
    crate::runtime::run_with(ctx, web_apps, watches).await
}

/// The controller, and the caches its watches keep.
struct WebApps {
    deployments: Cache<Deployment>,
    services: Cache<Service>,
    pods: Cache<Pod>,
}

impl Reconciler for WebApps {
    type Object = WebApp;
    const NAME: &'static str = NAME;

    async fn apply(&self, web_app: &WebApp, kit: &Toolkit) -> Result<Action> {
        remove_legacy_finalizer(web_app, kit).await?;
        if web_app.meta().deletion_timestamp.is_some() {
            // Being deleted: the garbage collector takes the children; applying them again would
            // only race it.
            return Ok(Action::await_change());
        }
        self.reconcile_children(web_app, kit).await
    }
}

/// The label our children and pods carry, whose value is the WebApp's name: what the Deployment and
/// the Service select pods by, and users' own selectors too.
const APP_LABEL: &str = "app";

/// What selects the WebApp's pods: `app=<name>`. The Deployment's selector cannot change once made.
fn pod_selector(web_app: &WebApp) -> BTreeMap<String, String> {
    BTreeMap::from([(APP_LABEL.to_owned(), web_app.name_any())])
}

/// The labels of the Deployment, the Service and the pods: the selector's, and the one our watches
/// select by.
fn labels(web_app: &WebApp) -> BTreeMap<String, String> {
    let mut labels = pod_selector(web_app);
    labels.extend(managed_by(NAME));
    labels
}

/// The pods' labels as a selector string (`app=web`), as the scale subresource reports it.
pub fn selector(web_app: &WebApp) -> String {
    pod_selector(web_app)
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn owned_meta(web_app: &WebApp) -> ObjectMeta {
    ObjectMeta {
        name: Some(web_app.name_any()),
        namespace: web_app.namespace(),
        labels: Some(labels(web_app)),
        owner_references: controller_reference(web_app),
        ..Default::default()
    }
}

pub fn desired_deployment(web_app: &WebApp) -> Deployment {
    Deployment {
        metadata: owned_meta(web_app),
        spec: Some(DeploymentSpec {
            replicas: Some(web_app.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(pod_selector(web_app)),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(web_app)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: CONTAINER.into(),
                        image: Some(web_app.spec.image.clone()),
                        ports: Some(vec![ContainerPort {
                            container_port: web_app.spec.port,
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn desired_service(web_app: &WebApp) -> Service {
    Service {
        metadata: owned_meta(web_app),
        spec: Some(ServiceSpec {
            selector: Some(pod_selector(web_app)),
            ports: Some(vec![ServicePort {
                name: Some(PORT_NAME.into()),
                port: web_app.spec.port,
                target_port: Some(IntOrString::Int(web_app.spec.port)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Whether the live Deployment has the fields we set, with our values: replicas, our labels on it and
/// its pod template, its selector, and our container's image and port. What others added (labels,
/// containers, ports) is theirs (see [`super::drift`]). One an earlier version made lacks the
/// managed-by label, and so is applied again, which adds it.
fn deployment_matches(live: &Deployment, web_app: &WebApp) -> bool {
    let ours = labels(web_app);
    let Some(spec) = &live.spec else { return false };
    let container = spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.iter().find(|c| c.name == CONTAINER));
    spec.replicas == Some(web_app.spec.replicas)
        && holds_all(live.metadata.labels.as_ref(), &ours)
        && holds_all(spec.selector.match_labels.as_ref(), &pod_selector(web_app))
        && holds_all(
            spec.template.metadata.as_ref().and_then(|m| m.labels.as_ref()),
            &ours,
        )
        && container.is_some_and(|c| {
            c.image.as_deref() == Some(web_app.spec.image.as_str())
                && c.ports
                    .as_ref()
                    .is_some_and(|p| p.iter().any(|p| p.container_port == web_app.spec.port))
        })
}

/// Whether the live Service has the fields we set: our labels on it, our selector, and our port,
/// the one named [`PORT_NAME`] (names are unique among a Service's ports), with our numbers. Ports and
/// selector keys others added are theirs.
fn service_matches(live: &Service, web_app: &WebApp) -> bool {
    let ours = labels(web_app);
    let Some(spec) = &live.spec else { return false };
    let port = spec
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(PORT_NAME));
    holds_all(live.metadata.labels.as_ref(), &ours)
        && holds_all(spec.selector.as_ref(), &pod_selector(web_app))
        && port.is_some_and(|p| {
            p.port == web_app.spec.port && p.target_port == Some(IntOrString::Int(web_app.spec.port))
        })
}

/// Why a container of these pods cannot start, as the kubelet reports it: the waiting reasons that
/// need a change (of the image, the spec, the program) rather than time.
const CANNOT_START: [&str; 8] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CrashLoopBackOff",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// The first container of `pods` that cannot start: its waiting reason, and a message naming the pod
/// and container with the kubelet's words.
pub fn container_that_cannot_start<'a>(
    pods: impl IntoIterator<Item = &'a Pod>,
) -> Option<(&'static str, String)> {
    pods.into_iter().find_map(|pod| {
        let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
        statuses.iter().find_map(|status| {
            let waiting = status.state.as_ref()?.waiting.as_ref()?;
            let reason = CANNOT_START
                .into_iter()
                .find(|r| waiting.reason.as_deref() == Some(*r))?;
            let said = waiting.message.as_deref().unwrap_or(reason);
            let message = format!(
                "pod {} container {}: {reason}: {said}",
                pod.name_any(),
                status.name
            );
            Some((reason, message))
        })
    })
}

/// A pod as its cache keeps it: what [`container_that_cannot_start`] reads and what maps it to its
/// WebApp (name, namespace, labels, each container's name and state), nothing else. A pod's spec and
/// the rest of its status are most of it, and the cache holds every pod of every WebApp.
pub fn as_cached(pod: &mut Pod) {
    let metadata = std::mem::take(&mut pod.metadata);
    pod.metadata = ObjectMeta {
        name: metadata.name,
        namespace: metadata.namespace,
        labels: metadata.labels,
        uid: metadata.uid,
        resource_version: metadata.resource_version,
        ..Default::default()
    };
    pod.spec = None;
    let statuses = pod.status.take().and_then(|s| s.container_statuses);
    pod.status = Some(PodStatus {
        container_statuses: statuses.map(|statuses| {
            statuses
                .into_iter()
                .map(|status| ContainerStatus {
                    name: status.name,
                    state: status.state,
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    });
}

/// Pending (no Deployment), Deploying (fewer ready than asked), Running.
pub fn phase(deployment: Option<&Deployment>, web_app: &WebApp) -> (&'static str, i32) {
    let Some(deployment) = deployment else {
        return ("Pending", 0);
    };
    let status = deployment.status.as_ref();
    let ready = status.and_then(|s| s.ready_replicas).unwrap_or(0);
    let observed = status.and_then(|s| s.observed_generation) >= deployment.metadata.generation;
    if observed && ready >= web_app.spec.replicas {
        ("Running", ready)
    } else {
        ("Deploying", ready)
    }
}

/// Removes [`LEGACY_FINALIZER`] if `web_app` carries it. The patch names the resourceVersion it read,
/// so that a list another controller changed meanwhile is refused (409, retried) rather than
/// overwritten.
async fn remove_legacy_finalizer(web_app: &WebApp, kit: &Toolkit) -> Result<()> {
    if !web_app.finalizers().iter().any(|f| f == LEGACY_FINALIZER) {
        return Ok(());
    }
    let others: Vec<&String> = web_app
        .finalizers()
        .iter()
        .filter(|f| *f != LEGACY_FINALIZER)
        .collect();
    // null rather than [] when none is left: the field goes, as the API server omits an empty list.
    let finalizers = if others.is_empty() {
        json!(null)
    } else {
        json!(others)
    };
    let patch = json!({"metadata": {
        "resourceVersion": web_app.resource_version(),
        "finalizers": finalizers,
    }});
    let api: Api<WebApp> = kit.api_beside(web_app);
    api.patch(&web_app.name_any(), &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    tracing::info!(
        finalizer = LEGACY_FINALIZER,
        "removed the finalizer earlier versions added"
    );
    Ok(())
}

impl WebApps {
    async fn reconcile_children(&self, web_app: &WebApp, kit: &Toolkit) -> Result<Action> {
        let name = web_app.name_any();

        // Observe: from the caches when they show our children as the spec asks, else from the API
        // server.
        let mut deployment = self
            .deployments
            .current(web_app, &name, |d| {
                controlled_by(d, web_app) && deployment_matches(d, web_app)
            })
            .await?;
        let service = self
            .services
            .current(web_app, &name, |s| {
                controlled_by(s, web_app) && service_matches(s, web_app)
            })
            .await?;

        // Compare: a same-named child someone else made is never taken over, and while one is in the
        // way neither child is applied, so the WebApp never half-runs beside a stranger's object.
        let foreign = foreign_child(web_app, deployment.as_ref(), service.as_ref());

        // Act on the children.
        if foreign.is_none()
            && !deployment
                .as_ref()
                .is_some_and(|d| deployment_matches(d, web_app))
        {
            deployment = Some(kit.apply(&desired_deployment(web_app)).await?);
            let note = format!("Deployment {name} applied");
            kit.publish(web_app, EventType::Normal, "DeploymentApplied", note);
        }
        if foreign.is_none() && !service.as_ref().is_some_and(|s| service_matches(s, web_app)) {
            kit.apply(&desired_service(web_app)).await?;
            let note = format!("Service {name} applied");
            kit.publish(web_app, EventType::Normal, "ServiceApplied", note);
        }

        // The status: a stranger's Deployment says nothing about ours.
        let ours = deployment.filter(|d| controlled_by(d, web_app));
        let (mut phase, ready) = phase(ours.as_ref(), web_app);
        // Not all ready yet: a container that cannot start is worth telling now, not at the
        // Deployment's progress deadline. The pods come from the cache: a pod's change reconciles
        // after the cache holds it.
        let mut cannot_start = None;
        if phase == "Deploying" && foreign.is_none() {
            let namespace = web_app.namespace().unwrap_or_default();
            let pods = self
                .pods
                .list(&namespace, |pod| pod.labels().get(APP_LABEL) == Some(&name));
            cannot_start = container_that_cannot_start(pods.iter().map(AsRef::as_ref));
            if cannot_start.is_some() {
                phase = "Failed";
            }
        }
        let previous = web_app.status.clone().unwrap_or_default();
        let generation = web_app.meta().generation;
        let running = phase == "Running";
        let mut status = WebAppStatus {
            phase: Some(phase.into()),
            ready_replicas: Some(ready),
            observed_generation: generation,
            selector: Some(selector(web_app)),
            conditions: vec![ready_condition(
                running,
                if running { "Running" } else { phase },
                &format!("{ready}/{} replicas ready", web_app.spec.replicas),
                find_ready(&previous.conditions),
                generation,
            )],
        };
        // A fault needs the user: the Ready condition says which, and a Warning Event too.
        let fault = foreign.clone().or_else(|| {
            cannot_start.map(|(reason, message)| (reason, format!("{message}: check spec.image")))
        });
        match fault {
            Some((reason, message)) => {
                // The Ready condition before this reconcile's, so that its transition time holds.
                status.conditions = previous.conditions.clone();
                kit.report_not_ready_in(web_app, status, reason, message).await?
            }
            None => kit.write_status(web_app, status).await?,
        }
        if let Some((_, message)) = foreign {
            return Err(Error::NotOwned(message));
        }
        // Drift is repaired by the controller's periodic resync of every object.
        Ok(Action::await_change())
    }
}

/// The first child whose name someone else holds, as a Ready reason and message.
fn foreign_child(
    web_app: &WebApp,
    deployment: Option<&Deployment>,
    service: Option<&Service>,
) -> Option<(&'static str, String)> {
    let name = web_app.name_any();
    if deployment.is_some_and(|d| !controlled_by(d, web_app)) {
        return Some((
            "DeploymentNotOwned",
            not_owned_message("Deployment", &name, "WebApp"),
        ));
    }
    if service.is_some_and(|s| !controlled_by(s, web_app)) {
        return Some(("ServiceNotOwned", not_owned_message("Service", &name, "WebApp")));
    }
    None
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::DeploymentStatus;

    use super::*;
    use crate::api::web_app::WebAppSpec;

    fn web_app() -> WebApp {
        let mut app = WebApp::new(
            "shop",
            WebAppSpec {
                image: "nginx:1.27".into(),
                replicas: 3,
                port: 8080,
            },
        );
        app.metadata.namespace = Some("default".into());
        app.metadata.uid = Some("uid-1".into());
        app
    }

    #[test]
    fn children_select_app_name_and_carry_the_spec() {
        let app = web_app();
        let deployment = desired_deployment(&app);
        assert!(deployment_matches(&deployment, &app));
        assert_eq!(
            deployment
                .spec
                .as_ref()
                .unwrap()
                .selector
                .match_labels
                .as_ref()
                .unwrap()["app"],
            "shop"
        );
        let service = desired_service(&app);
        assert!(service_matches(&service, &app));
        assert_eq!(service.spec.unwrap().ports.unwrap()[0].port, 8080);
        let mut changed = app.clone();
        changed.spec.image = "nginx:1.28".into();
        assert!(!deployment_matches(&deployment, &changed));
    }

    #[test]
    fn children_match_while_our_fields_hold_our_values_whatever_others_added() {
        let app = web_app();
        let mut deployment = desired_deployment(&app);
        let template = deployment
            .spec
            .as_mut()
            .unwrap()
            .template
            .metadata
            .as_mut()
            .unwrap();
        template
            .labels
            .get_or_insert_default()
            .insert("team".into(), "x".into());
        deployment
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers
            .push(Container {
                name: "sidecar".into(),
                ..Default::default()
            });
        assert!(
            deployment_matches(&deployment, &app),
            "a label and a container added"
        );
        let mut relabelled = deployment.clone();
        let template = relabelled
            .spec
            .as_mut()
            .unwrap()
            .template
            .metadata
            .as_mut()
            .unwrap();
        template
            .labels
            .get_or_insert_default()
            .insert("app".into(), "other".into());
        assert!(!deployment_matches(&relabelled, &app), "our label changed");
        let mut scaled = deployment.clone();
        scaled.spec.as_mut().unwrap().replicas = Some(9);
        assert!(!deployment_matches(&scaled, &app), "our replicas changed");

        let mut service = desired_service(&app);
        let spec = service.spec.as_mut().unwrap();
        spec.ports.get_or_insert_default().push(ServicePort {
            name: Some("metrics".into()),
            port: 9090,
            ..Default::default()
        });
        spec.selector
            .get_or_insert_default()
            .insert("tier".into(), "web".into());
        assert!(service_matches(&service, &app), "a port and a selector key added");
        let mut moved = service.clone();
        moved.spec.as_mut().unwrap().ports.as_mut().unwrap()[0].port = 9999;
        assert!(!service_matches(&moved, &app), "our port changed");
        let mut unnamed = service.clone();
        unnamed.spec.as_mut().unwrap().ports.as_mut().unwrap().remove(0);
        assert!(!service_matches(&unnamed, &app), "our port removed");
        let mut reselected = service.clone();
        reselected.spec.as_mut().unwrap().selector = Some(BTreeMap::from([("tier".into(), "web".into())]));
        assert!(!service_matches(&reselected, &app), "our selector key removed");
    }

    #[test]
    fn children_and_pods_carry_the_managed_by_label_and_select_by_app_alone() {
        let app = web_app();
        let deployment = desired_deployment(&app);
        let managed = Some(&"web-app".to_owned());
        assert_eq!(deployment.labels().get("app.kubernetes.io/managed-by"), managed);
        let spec = deployment.spec.as_ref().unwrap();
        let template = spec.template.metadata.as_ref().unwrap().labels.as_ref().unwrap();
        assert_eq!(
            template.get("app.kubernetes.io/managed-by"),
            managed,
            "on the pods too"
        );
        assert_eq!(
            template.get("app"),
            Some(&"shop".to_owned()),
            "users' selectors keep working"
        );
        let selected = BTreeMap::from([("app".to_owned(), "shop".to_owned())]);
        assert_eq!(spec.selector.match_labels.as_ref(), Some(&selected));
        let service = desired_service(&app);
        assert_eq!(service.labels().get("app.kubernetes.io/managed-by"), managed);
        assert_eq!(service.spec.as_ref().unwrap().selector.as_ref(), Some(&selected));
        assert_eq!(selector(&app), "app=shop");
    }

    #[test]
    fn children_an_earlier_version_made_without_the_managed_by_label_are_applied_again() {
        let app = web_app();
        let mut deployment = desired_deployment(&app);
        deployment
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove("app.kubernetes.io/managed-by");
        let template = deployment
            .spec
            .as_mut()
            .unwrap()
            .template
            .metadata
            .as_mut()
            .unwrap();
        template
            .labels
            .as_mut()
            .unwrap()
            .remove("app.kubernetes.io/managed-by");
        assert!(!deployment_matches(&deployment, &app));
        let mut service = desired_service(&app);
        service
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove("app.kubernetes.io/managed-by");
        assert!(!service_matches(&service, &app));
    }

    #[test]
    fn a_cached_pod_keeps_what_tells_a_container_that_cannot_start_and_its_web_app() {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "shop-1", "namespace": "default", "uid": "u", "resourceVersion": "7",
                "labels": {"app": "shop", "app.kubernetes.io/managed-by": "web-app"},
                "annotations": {"big": "x".repeat(1000)},
                "managedFields": [{"manager": "kubelet"}],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "shop-1", "uid": "r"}],
            },
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            "status": {
                "phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [{
                    "name": "web", "image": "nope:1", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}},
                }],
            },
        }))
        .unwrap();
        as_cached(&mut pod);
        assert_eq!(pod.name_any(), "shop-1");
        assert_eq!(pod.namespace().as_deref(), Some("default"));
        assert_eq!(pod.labels().get("app"), Some(&"shop".to_owned()));
        assert!(pod.spec.is_none());
        assert!(pod.annotations().is_empty() && pod.owner_references().is_empty());
        assert!(pod.metadata.managed_fields.is_none());
        assert!(pod.status.as_ref().unwrap().conditions.is_none());
        assert_eq!(
            container_that_cannot_start([&pod]),
            Some((
                "ErrImagePull",
                "pod shop-1 container web: ErrImagePull: not found".into()
            ))
        );
    }

    #[test]
    fn phase_follows_readiness() {
        let app = web_app();
        assert_eq!(phase(None, &app), ("Pending", 0));
        let mut deployment = desired_deployment(&app);
        deployment.metadata.generation = Some(1);
        deployment.status = Some(DeploymentStatus {
            ready_replicas: Some(1),
            observed_generation: Some(1),
            ..Default::default()
        });
        assert_eq!(phase(Some(&deployment), &app), ("Deploying", 1));
        deployment.status = Some(DeploymentStatus {
            ready_replicas: Some(3),
            observed_generation: Some(1),
            ..Default::default()
        });
        assert_eq!(phase(Some(&deployment), &app), ("Running", 3));
    }

    fn pod_waiting(name: &str, reason: &str, message: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {"containerStatuses": [{
                "name": "web", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": reason, "message": message}},
            }]},
        }))
        .unwrap()
    }

    #[test]
    fn a_container_that_cannot_start_is_named_with_the_kubelets_reason() {
        let starting = pod_waiting("shop-1", "ContainerCreating", "");
        let pulling = pod_waiting("shop-2", "ImagePullBackOff", "Back-off pulling image \"nope:1\"");
        assert_eq!(container_that_cannot_start(std::slice::from_ref(&starting)), None);
        assert_eq!(
            container_that_cannot_start(&[starting, pulling]),
            Some((
                "ImagePullBackOff",
                "pod shop-2 container web: ImagePullBackOff: Back-off pulling image \"nope:1\"".into()
            ))
        );
    }
}
