//! Users other than the administrator: [`crate::Environment::add_user`]. Each is known to the
//! server by a bearer token of its own, as kube-apiserver knows the users of its static token file,
//! and may do what RBAC grants it: nothing but discovery and self-reviews until a test binds it to
//! a role.

use apiserver::ApiServer;

use crate::{Error, Result};

/// A client authenticated as the user `name` in `groups` (and `system:authenticated`).
pub(crate) fn client_for(server: &ApiServer, name: &str, groups: &[&str]) -> Result<kube::Client> {
    let token = server.add_user(name, groups).ok_or(Error::NoUsers)?;
    let mut config = server.kube_config();
    config.auth_info.token = Some(token.into());
    kube::Client::try_from(config).map_err(Error::Client)
}
