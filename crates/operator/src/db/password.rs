//! The database password: given once (`--psql-password`, DATABASE_URL), or read from a file (a
//! mounted Secret) each time a connection is opened, so that a rotated password is used without a
//! restart. Connections already open keep the password they were opened with: PostgreSQL keeps
//! existing sessions after `ALTER ROLE ... PASSWORD`, and the pool replaces them as they fail.

use std::{
    path::{Path, PathBuf},
    sync::Mutex,
};

use crate::{Error, Result};

pub enum PasswordSource {
    /// No password here: the connection string's own, or none.
    Unset,
    Given(String),
    File {
        path: PathBuf,
        /// What the file held when it was last read: used while it cannot be read (a Secret
        /// volume between two versions, say), so that a passing fault does not refuse connections.
        last_read: Mutex<String>,
    },
}

impl std::fmt::Debug for PasswordSource {
    // The password never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PasswordSource::Unset => f.write_str("Unset"),
            PasswordSource::Given(_) => f.write_str("Given(<hidden>)"),
            PasswordSource::File { path, .. } => f.debug_struct("File").field("path", path).finish(),
        }
    }
}

/// The password a file holds: its content without the line break an editor or `echo` leaves.
fn read_password(path: &Path) -> std::io::Result<String> {
    let content = std::fs::read_to_string(path)?;
    Ok(content.trim_end_matches(['\n', '\r']).to_owned())
}

impl PasswordSource {
    /// The file wins over a given password. An unreadable file at start is a configuration error:
    /// it can never have worked.
    pub fn new(file: Option<&Path>, given: Option<&str>) -> Result<Self> {
        match (file, given) {
            (Some(path), _) => {
                let password = read_password(path).map_err(|e| {
                    Error::Config(format!("cannot read the password file {}: {e}", path.display()))
                })?;
                Ok(PasswordSource::File {
                    path: path.to_owned(),
                    last_read: Mutex::new(password),
                })
            }
            (None, Some(password)) => Ok(PasswordSource::Given(password.to_owned())),
            (None, None) => Ok(PasswordSource::Unset),
        }
    }

    /// The password for a connection opened now. A file is read again each time: a few bytes from
    /// a tmpfs for each new connection, which the pool opens rarely, and no watcher to keep alive.
    pub fn current(&self) -> Option<String> {
        match self {
            PasswordSource::Unset => None,
            PasswordSource::Given(password) => Some(password.clone()),
            PasswordSource::File { path, last_read } => {
                let mut last_read = last_read.lock().unwrap_or_else(|p| p.into_inner());
                match read_password(path) {
                    Ok(password) => *last_read = password,
                    Err(error) => tracing::warn!(
                        path = %path.display(),
                        %error,
                        "cannot read the password file; connecting with the password it held last"
                    ),
                }
                Some(last_read.clone())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_at_each_connection_and_its_last_content_outlives_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("password");
        std::fs::write(&path, "first\n").unwrap();
        let source = PasswordSource::new(Some(&path), Some("given")).unwrap();
        assert_eq!(source.current().as_deref(), Some("first"), "the file wins");
        std::fs::write(&path, "second\r\n").unwrap();
        assert_eq!(source.current().as_deref(), Some("second"));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(source.current().as_deref(), Some("second"));
        assert!(!format!("{source:?}").contains("second"));
    }

    #[test]
    fn a_missing_file_at_start_is_a_configuration_error() {
        let missing = PasswordSource::new(Some(Path::new("/nonexistent/pw")), None);
        assert!(matches!(missing, Err(Error::Config(m)) if m.contains("password file")));
        let given = PasswordSource::new(None, Some("s3cret")).unwrap();
        assert_eq!(given.current().as_deref(), Some("s3cret"));
        assert!(!format!("{given:?}").contains("s3cret"));
        assert_eq!(PasswordSource::new(None, None).unwrap().current(), None);
    }
}
