//! RBAC, the rbac.authorization.k8s.io group: who may do what by its Roles, ClusterRoles and their
//! bindings (`authorizer`, which the authorization filter, the impersonation filter and the access
//! reviews ask), the escalation check on writes of them (`escalation`), and the bootstrap policy
//! kube-apiserver creates at start-up (`bootstrap`). The aggregation of ClusterRoles is
//! kube-controller-manager's, in [`crate::emulated`].

pub(crate) mod authorizer;
pub(crate) mod bootstrap;
pub(crate) mod escalation;
