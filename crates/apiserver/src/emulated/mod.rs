//! What kube-controller-manager would do: garbage collection, namespaces, Deployment readiness.
