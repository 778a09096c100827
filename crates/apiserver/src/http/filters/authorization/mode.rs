//! Which authorizer decides requests: the server's configuration, read by the authorization filter and
//! the self-reviews alike.

/// How requests are authorized, as kube-apiserver's `--authorization-mode`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Authorization {
    /// RBAC, with `system:masters` allowed everything (the default, as kube-apiserver is run).
    #[default]
    Rbac,
    /// Every authenticated request is allowed: faster, for tests that do not care who may do what.
    AlwaysAllow,
}
