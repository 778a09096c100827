//! Who a request comes from, once its token is checked.

/// Who a request comes from, as its token says; handlers find it in the request's extensions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Identity {
    /// The holder of the server's own token (or anyone, with authentication off).
    #[default]
    Administrator,
    /// The holder of a token issued through `serviceaccounts/{name}/token`.
    ServiceAccount {
        namespace: String,
        name: String,
        uid: String,
    },
    /// Whom the holder of a token acts as through `Impersonate-User` (and `-Group`, `-Uid`).
    Impersonated {
        user: String,
        uid: String,
        groups: Vec<String>,
    },
}
