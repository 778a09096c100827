//! The tokens the server issued to service accounts (`serviceaccounts/{name}/token`), and whom each
//! authenticates as while it lasts.

use std::{sync::Mutex, time::SystemTime};

use subtle::ConstantTimeEq;

use super::identity::Identity;
use crate::store::{Store, meta};

/// A token handed out, and whose it is.
pub(super) struct Issued {
    pub token: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub expires: SystemTime,
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

    /// Who `presented` authenticates as: the service account it was issued for, while that account
    /// is the one it was issued for (same uid) and the token has not expired. Every issued token is
    /// compared in constant time, so that timing does not tell how much of a guess was right.
    pub fn authenticate(&self, store: &Store, presented: &str) -> Option<Identity> {
        let now = SystemTime::now();
        let (namespace, name, uid) = {
            let all = self.issued.lock().ok()?;
            let found = all
                .iter()
                .filter(|i| bool::from(i.token.as_bytes().ct_eq(presented.as_bytes())))
                .find(|i| i.expires > now)?;
            (found.namespace.clone(), found.name.clone(), found.uid.clone())
        };
        let accounts = store.resolve("", "v1", "serviceaccounts")?;
        let account = store.get(&accounts, &namespace, &name).ok()?;
        (meta::uid(&account) == uid).then_some(Identity::ServiceAccount { namespace, name, uid })
    }
}
