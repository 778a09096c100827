//! Who a request comes from, once its token is checked.

use crate::token_holder;

/// Who a request comes from, as its token says; handlers find it in the request's extensions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Identity {
    /// The holder of the server's own token (or anyone, with authentication off).
    #[default]
    Administrator,
    /// The holder of a token issued through `serviceaccounts/{name}/token`.
    ServiceAccount {
        /// The ServiceAccount's namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its uid, as the token claims it.
        uid: String,
        /// What a TokenReview reports beside the name: the token's id, the pod it is bound to.
        extra: std::collections::BTreeMap<String, Vec<String>>,
    },
    /// The holder of a token the server was given for a user ([`crate::ApiServer::add_user`]), as
    /// kube-apiserver's static token file names users.
    User {
        /// The user name.
        name: String,
        /// Its groups, `system:authenticated` among them.
        groups: Vec<String>,
    },
    /// Whom the holder of a token acts as through `Impersonate-User` (and `-Group`, `-Uid`).
    Impersonated {
        /// `Impersonate-User`.
        user: String,
        /// `Impersonate-Uid`, empty when not given.
        uid: String,
        /// `Impersonate-Group`s, with `system:authenticated` (`system:unauthenticated` for
        /// `system:anonymous`) added as kube-apiserver adds it.
        groups: Vec<String>,
    },
}

impl Identity {
    /// The user name authorizers see: `admin`, `system:serviceaccount:NS:NAME`, a user's own.
    pub fn username(&self) -> String {
        match self {
            Identity::Administrator => token_holder::USER.to_owned(),
            Identity::ServiceAccount { namespace, name, .. } => {
                format!("system:serviceaccount:{namespace}:{name}")
            }
            Identity::User { name, .. } => name.clone(),
            Identity::Impersonated { user, .. } => user.clone(),
        }
    }

    /// The groups authorizers see, `system:authenticated` among them.
    pub fn groups(&self) -> Vec<String> {
        match self {
            Identity::Administrator => token_holder::GROUPS.iter().map(|g| (*g).to_owned()).collect(),
            Identity::ServiceAccount { namespace, .. } => vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_owned(),
            ],
            Identity::User { groups, .. } | Identity::Impersonated { groups, .. } => groups.clone(),
        }
    }
}
