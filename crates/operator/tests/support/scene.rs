//! Where an operator test plays: a control plane with our CRDs, a namespace of the test's own, and the
//! controllers (in this process or as `operator run`) watching only that namespace. The same on every
//! tier: on the cluster tier, which every test of the tier shares side by side, nothing else keeps one
//! test's objects from another's controllers, so the embedded and real tiers work the same way and a
//! test has one code path.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::{NamespaceResourceScope, api::core::v1::Namespace};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use operator::{
    api::{postgres_writer::PostgresWriter, web_app::WebApp},
    runtime::ControllerContext,
};
use serde_json::json;
use tokio::sync::watch;

use super::{Backend, ControlPlane, OperatorProcess};

/// A namespace of the test's own on a control plane with our CRDs; deleted when the scene is dropped.
pub struct Scene {
    /// A client with every right.
    pub client: kube::Client,
    /// The test's namespace: `<name>-` and five random characters.
    pub namespace: String,
    /// Holds the administrator's kubeconfig, for kubectl and `operator run`.
    home: tempfile::TempDir,
    /// Last: the control plane outlives the clean-up in [`Drop`].
    plane: ControlPlane,
}

impl Scene {
    /// A control plane of kind `backend` (on the cluster tier: the shared cluster), our CRDs applied, and
    /// a fresh namespace named after `name` (a few words saying which test it is).
    pub async fn start(backend: Backend, name: &str) -> Scene {
        let plane = ControlPlane::start(backend)
            .await
            .expect("the control plane starts (on the cluster tier: testenv/cluster/up.sh ran)");
        Scene::on(plane, name).await
    }

    /// The same on a control plane the test started itself (the embedded server configured for it).
    pub async fn on(plane: ControlPlane, name: &str) -> Scene {
        let client = plane.client();
        // Applied, not created: on the cluster tier another test may have installed them first.
        super::apply_crds(&client).await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        // generateName leaves room for five characters in a 63-character name.
        let prefix: String = name.chars().take(40).collect();
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"generateName": format!("{prefix}-")}}))
                .expect("a Namespace");
        let namespace = namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .expect("the test's namespace is created")
            .name_any();
        let home = tempfile::tempdir().expect("a temporary directory");
        plane
            .write_kubeconfig(&home.path().join("kubeconfig"))
            .expect("kubeconfig written");
        Scene {
            client,
            namespace,
            home,
            plane,
        }
    }

    pub fn plane(&self) -> &ControlPlane {
        &self.plane
    }

    pub fn backend(&self) -> Backend {
        self.plane.backend()
    }

    /// The objects of kind `K` in the test's namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// `<namespace>/<name>`: how a PostgresWriter's row, a pending release, and the like name it.
    pub fn id(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }

    /// The administrator's kubeconfig; kubectl keeps its cache beside it.
    pub fn kubeconfig(&self) -> PathBuf {
        self.home.path().join("kubeconfig")
    }

    /// A directory that lives as long as the scene, for logs and manifests.
    pub fn dir(&self) -> &Path {
        self.home.path()
    }

    /// A controller context as `operator run --watch-namespace <ns>` with `POD_NAMESPACE=<ns>` makes
    /// it: the controllers see the test's namespace only, and keep what they keep (the ConfigMap of
    /// pending row releases) there too.
    pub fn context(&self, resync: Duration) -> (ControllerContext, watch::Sender<bool>) {
        self.context_with_concurrency(resync, 4)
    }

    /// The same, with up to `concurrency` reconciles at once (`--max-concurrent-reconciles`).
    pub fn context_with_concurrency(
        &self,
        resync: Duration,
        concurrency: u16,
    ) -> (ControllerContext, watch::Sender<bool>) {
        self.context_via(&self.client, resync, concurrency)
    }

    /// The same, with the controllers talking to the API server through `client` (a proxy's, say).
    pub fn context_via(
        &self,
        client: &kube::Client,
        resync: Duration,
        concurrency: u16,
    ) -> (ControllerContext, watch::Sender<bool>) {
        let (mut ctx, shutdown) = super::context_with_concurrency(client, resync, concurrency);
        ctx.namespace = self.namespace.clone();
        ctx.watch_namespace = Some(self.namespace.clone());
        (ctx, shutdown)
    }

    /// The flags and environment that keep `operator run` to the test's namespace, after `args`.
    pub fn scoped_args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut scoped = args.to_vec();
        scoped.extend(["--watch-namespace", &self.namespace]);
        scoped
    }

    /// `operator <args> --watch-namespace <ns>` with `POD_NAMESPACE=<ns>` (its Lease, its pending
    /// releases, its webhook certificate's Secret there) beside `env`, as the administrator.
    pub fn operator(&self, args: &[&str], env: &[(&str, &str)]) -> OperatorProcess {
        let mut scoped_env = vec![("POD_NAMESPACE", self.namespace.as_str())];
        scoped_env.extend_from_slice(env);
        OperatorProcess::spawn(&self.kubeconfig(), &self.scoped_args(args), &scoped_env)
    }

    /// Deletes the namespace and lets go of whatever our finalizers still hold in it: the controller
    /// that would remove them has stopped with the test, and a namespace held by them would stay
    /// Terminating on the shared cluster until it is torn down.
    async fn clean_up(client: kube::Client, namespace: String) {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let _ = namespaces.delete(&namespace, &DeleteParams::default()).await;
        release_finalizers::<PostgresWriter>(&client, &namespace).await;
        release_finalizers::<WebApp>(&client, &namespace).await;
    }
}

async fn release_finalizers<K>(client: &kube::Client, namespace: &str)
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let Ok(listed) = api.list(&ListParams::default()).await else {
        return;
    };
    let none = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    for object in listed.items.iter().filter(|o| !o.finalizers().is_empty()) {
        let _ = api
            .patch(&object.name_any(), &PatchParams::default(), &none)
            .await;
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        // Also when the test failed: a namespace left behind on the shared cluster keeps its pods.
        // Blocking here is fine on the tests' multi-threaded runtime; elsewhere there is nothing to
        // run the requests on.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if runtime.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return;
        }
        let clean_up = Scene::clean_up(self.client.clone(), self.namespace.clone());
        tokio::task::block_in_place(|| {
            runtime.block_on(async {
                // A control plane that stopped answering is no reason to hang the test's end.
                let _ = tokio::time::timeout(Duration::from_secs(20), clean_up).await;
            })
        });
    }
}
