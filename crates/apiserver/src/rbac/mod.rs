//! RBAC's state that kube-apiserver keeps itself: the bootstrap policy it creates at start-up. Who
//! may do what is decided by the authorizer of [`crate::http::filters::authorization`]; the
//! aggregation of ClusterRoles is kube-controller-manager's, in [`crate::emulated`].

pub(crate) mod bootstrap;
