//! Users the server was told of, each with a token of its own, as kube-apiserver's static token
//! file (`--token-auth-file`) names them: a request bearing one authenticates as that user, in its
//! groups and `system:authenticated`. [`crate::ApiServer::add_user`] adds them while the server runs;
//! they are kept in memory only.

use std::sync::RwLock;

use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

use super::{identity::Identity, random_token::generate_token};

struct StaticUser {
    token: SecretString,
    name: String,
    groups: Vec<String>,
}

/// The users added so far.
#[derive(Default)]
pub struct StaticUsers {
    users: RwLock<Vec<StaticUser>>,
}

// Hand-written: the tokens stay out of Debug output.
impl std::fmt::Debug for StaticUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.users.read().map(|users| users.len()).unwrap_or_default();
        write!(f, "StaticUsers({count})")
    }
}

impl StaticUsers {
    /// Adds `name` in `groups` (and `system:authenticated`), and returns the new token it is known by.
    pub fn add(&self, name: &str, groups: &[String]) -> String {
        let token = generate_token();
        let mut groups = groups.to_vec();
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".to_owned());
        }
        if let Ok(mut users) = self.users.write() {
            users.push(StaticUser {
                token: SecretString::from(token.clone()),
                name: name.to_owned(),
                groups,
            });
        }
        token
    }

    /// Whose `presented` is. Every token is compared in constant time, so that timing does not tell
    /// how much of a guess was right.
    pub fn identify(&self, presented: &str) -> Option<Identity> {
        let users = self.users.read().ok()?;
        users
            .iter()
            .filter(|user| bool::from(user.token.expose_secret().as_bytes().ct_eq(presented.as_bytes())))
            .map(|user| Identity::User {
                name: user.name.clone(),
                groups: user.groups.clone(),
            })
            .next()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_token_names_it_and_its_groups() {
        let users = StaticUsers::default();
        let token = users.add("alice", &["team".to_owned()]);
        assert_eq!(
            users.identify(&token),
            Some(Identity::User {
                name: "alice".into(),
                groups: vec!["team".into(), "system:authenticated".into()]
            })
        );
        assert_eq!(users.identify("wrong"), None);
        assert!(!format!("{users:?}").contains(&token));
    }
}
