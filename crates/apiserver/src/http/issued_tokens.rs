//! The tokens the server issued to service accounts (`serviceaccounts/{name}/token`), and whom each
//! authenticates as while it lasts: until it expires, its service account is deleted (or replaced:
//! another uid), or the object it is bound to (a Pod, Secret or Node) is; and only for the audiences
//! it was issued for, as kube-apiserver's service-account token authenticator checks them.

use std::{collections::BTreeMap, sync::Mutex, time::SystemTime};

use subtle::ConstantTimeEq;

use super::identity::Identity;
use crate::store::{Store, meta};

/// The audience kube-apiserver's requests are authenticated for (its `--api-audiences`, by default
/// its issuer), and the one its tokens name when a TokenRequest names none.
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc";

/// The object a token is bound to: it is valid while that object exists with this uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BoundObject {
    /// `pods`, `secrets` or `nodes`.
    pub plural: &'static str,
    pub name: String,
    pub uid: String,
}

/// A token handed out, and whose it is.
pub(super) struct Issued {
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
    pub(super) fn issue(&self, issued: Issued) {
        if let Ok(mut all) = self.issued.lock() {
            let now = SystemTime::now();
            all.retain(|i| i.expires > now);
            all.push(issued);
        }
    }

    /// Who `presented` authenticates as when a request is made with it: see
    /// [`ServiceAccountTokens::authenticate_for`], for the server's own audience.
    pub fn authenticate(&self, store: &Store, presented: &str) -> Option<Identity> {
        self.authenticate_for(store, presented, &[API_AUDIENCE.to_owned()])
            .map(|(identity, _)| identity)
    }

    /// Who `presented` authenticates as for `audiences`, and which of them the token is for: the
    /// service account it was issued for, while that account is the one it was issued for (same
    /// uid), the object it is bound to still exists with the same uid, the token has not expired,
    /// and it names one of `audiences`. Every issued token is compared in constant time, so that
    /// timing does not tell how much of a guess was right.
    pub fn authenticate_for(
        &self,
        store: &Store,
        presented: &str,
        audiences: &[String],
    ) -> Option<(Identity, Vec<String>)> {
        let now = SystemTime::now();
        let (namespace, name, uid, bound, matched, extra) = {
            let all = self.issued.lock().ok()?;
            let found = all
                .iter()
                .filter(|i| bool::from(i.token.as_bytes().ct_eq(presented.as_bytes())))
                .find(|i| i.expires > now)?;
            let matched: Vec<String> = audiences
                .iter()
                .filter(|a| found.audiences.contains(a))
                .cloned()
                .collect();
            (
                found.namespace.clone(),
                found.name.clone(),
                found.uid.clone(),
                found.bound.clone(),
                matched,
                found.extra.clone(),
            )
        };
        if matched.is_empty() {
            return None;
        }
        let still = |plural: &str, namespace: &str, name: &str, uid: &str| {
            store
                .resolve("", "v1", plural)
                .and_then(|rt| store.get(&rt, namespace, name).ok())
                .is_some_and(|object| meta::uid(&object) == uid)
        };
        if !still("serviceaccounts", &namespace, &name, &uid) {
            return None;
        }
        if let Some(bound) = &bound {
            let scope = if bound.plural == "nodes" {
                ""
            } else {
                namespace.as_str()
            };
            if !still(bound.plural, scope, &bound.name, &bound.uid) {
                return None;
            }
        }
        Some((
            Identity::ServiceAccount {
                namespace,
                name,
                uid,
                extra,
            },
            matched,
        ))
    }
}
