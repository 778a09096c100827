//! The tokens the server issued to service accounts (`serviceaccounts/{name}/token`), and whom each
//! authenticates as while it lasts: until it expires, its service account is deleted (or replaced:
//! another uid), or the object it is bound to (a Pod, Secret or Node) is; and only for the audiences
//! it was issued for, as kube-apiserver's service-account token authenticator checks them.

use std::{collections::BTreeMap, sync::Mutex, time::SystemTime};

use apimachinery::meta;
use subtle::ConstantTimeEq;

use super::identity::Identity;
use crate::store::Store;

/// The audience kube-apiserver's requests are authenticated for (its `--api-audiences`, by default
/// its issuer), and the one its tokens name when a TokenRequest names none.
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc";

/// The object a token is bound to: it is valid while that object exists with this uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::http) struct BoundObject {
    /// `pods`, `secrets` or `nodes`.
    pub plural: &'static str,
    /// Where it is: the service account's namespace for a pod or a secret, empty for a node.
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// A token handed out, and whose it is.
pub(in crate::http) struct Issued {
    pub token: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub expires: SystemTime,
    pub audiences: Vec<String>,
    pub bound: Option<BoundObject>,
    /// What the token's holder is known by besides its name: the JWT's id and the bound pod.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Whom a presented token authenticates as, if it is one the server issued.
#[derive(Debug)]
pub enum Verdict {
    /// The service account, and which of the audiences asked for the token is good for.
    Authenticated(Identity, Vec<String>),
    /// No token the server issued (or an expired one, forgotten since): someone else's to judge.
    NotIssued,
    /// A token the server issued that no longer authenticates, and why, in kube-apiserver's words.
    Refused(String),
}

/// `list` as Go's `%q` prints a slice of strings: `["a" "b"]`.
fn quoted(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|item| format!("{item:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// The tokens issued and not yet expired.
#[derive(Default)]
pub struct ServiceAccountTokens {
    issued: Mutex<Vec<Issued>>,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.issued.lock().map(|issued| issued.len()).unwrap_or_default();
        write!(f, "ServiceAccountTokens({count} issued)")
    }
}

impl ServiceAccountTokens {
    pub(in crate::http) fn issue(&self, issued: Issued) {
        if let Ok(mut all) = self.issued.lock() {
            let now = SystemTime::now();
            all.retain(|i| i.expires > now);
            all.push(issued);
        }
    }

    /// Who `presented` authenticates as when a request is made with it: see
    /// [`ServiceAccountTokens::authenticate_for`], for the server's own audience.
    pub fn authenticate(&self, store: &Store, presented: &str) -> Option<Identity> {
        match self.authenticate_for(store, presented, &[API_AUDIENCE.to_owned()]) {
            Verdict::Authenticated(identity, _) => Some(identity),
            Verdict::NotIssued | Verdict::Refused(_) => None,
        }
    }

    /// Who `presented` authenticates as for `audiences`, and which of them the token is for: the
    /// service account it was issued for, while that account is the one it was issued for (same
    /// uid), the object it is bound to still exists with the same uid, the token has not expired,
    /// and it names one of `audiences`. Every issued token is compared in constant time, so that
    /// timing does not tell how much of a guess was right.
    pub fn authenticate_for(&self, store: &Store, presented: &str, audiences: &[String]) -> Verdict {
        let now = SystemTime::now();
        let (namespace, name, uid, bound, extra, matched) = {
            let Ok(all) = self.issued.lock() else {
                return Verdict::NotIssued;
            };
            let Some(found) = all
                .iter()
                .find(|i| bool::from(i.token.as_bytes().ct_eq(presented.as_bytes())))
            else {
                return Verdict::NotIssued;
            };
            if found.expires <= now {
                return Verdict::Refused("service account token has expired".into());
            }
            let matched: Vec<String> = audiences
                .iter()
                .filter(|a| found.audiences.contains(a))
                .cloned()
                .collect();
            if matched.is_empty() {
                return Verdict::Refused(format!(
                    "token audiences {} is invalid for the target audiences {}",
                    quoted(&found.audiences),
                    quoted(audiences)
                ));
            }
            (
                found.namespace.clone(),
                found.name.clone(),
                found.uid.clone(),
                found.bound.clone(),
                found.extra.clone(),
                matched,
            )
        };
        match crate::kinds::service_accounts::stored_uid(store, &namespace, &name) {
            None => return Verdict::Refused(format!("service account {namespace}/{name} has been deleted")),
            Some(stored) if stored != uid => {
                return Verdict::Refused(format!(
                    "service account UID ({stored}) does not match claim ({uid})"
                ));
            }
            Some(_) => {}
        }
        if let Some(bound) = &bound {
            let stored = store.find("", "v1", bound.plural, &bound.namespace, &bound.name);
            match stored.as_ref().map(meta::uid) {
                None => return Verdict::Refused("service account token has been invalidated".into()),
                Some(stored) if stored != bound.uid => {
                    let kind = bound.plural.trim_end_matches('s');
                    return Verdict::Refused(format!(
                        "{kind} UID ({stored}) does not match service account {kind} ref claim ({})",
                        bound.uid
                    ));
                }
                Some(_) => {}
            }
        }
        Verdict::Authenticated(
            Identity::ServiceAccount {
                namespace,
                name,
                uid,
                extra,
            },
            matched,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn audiences_are_quoted_as_go_prints_a_list_of_strings() {
        let audiences = ["https://vault.example.com".to_owned(), "a \"b\"".to_owned()];
        assert_eq!(quoted(&audiences), r#"["https://vault.example.com" "a \"b\""]"#);
        assert_eq!(quoted(&[]), "[]");
    }
}
