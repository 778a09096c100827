//! What the tests of the manager's way into PostgreSQL share (a rotated password, TLS): a login role
//! of their own, files replaced as the kubelet replaces a mounted Secret's, and the Ready condition's
//! message.

use std::path::{Path, PathBuf};

use operator::api::postgres_writer::PostgresWriter;

/// Makes the login role `role` with `password`, allowed to create the operator's tables.
pub async fn create_role(admin: &tokio_postgres::Client, role: &str, password: &str) {
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN PASSWORD '{password}'; GRANT CREATE, USAGE ON SCHEMA public TO {role}"
        ))
        .await
        .expect("a login role");
}

/// Replaces `path`'s content in one step, as the kubelet swaps a Secret volume's files: a reader sees
/// the old content or the new, never a half-written file.
pub fn replace_file(path: &Path, content: &[u8]) {
    let next = path.with_extension("next");
    std::fs::write(&next, content).expect("new content written");
    std::fs::rename(&next, path).expect("new content in place");
}

/// A Secret mounted as the kubelet lays it out: each key a link through `..data` to a directory of
/// the current content; an update writes a new directory and swaps `..data` in one rename, so that a
/// reader sees every file old or every file new (a certificate never beside the wrong key).
pub struct MountedSecret {
    dir: PathBuf,
    version: u32,
}

impl MountedSecret {
    /// Mounts `files` (name, content) in `dir`, which must not exist yet.
    pub fn mount(dir: &Path, files: &[(&str, &[u8])]) -> MountedSecret {
        std::fs::create_dir(dir).expect("the mount's directory");
        let mut mounted = MountedSecret {
            dir: dir.to_owned(),
            version: 0,
        };
        mounted.update(files);
        for (name, _) in files {
            std::os::unix::fs::symlink(Path::new("..data").join(name), dir.join(name)).expect("a key's link");
        }
        mounted
    }

    /// Where the key `name` is read.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The Secret's new content, every key at once.
    pub fn update(&mut self, files: &[(&str, &[u8])]) {
        self.version += 1;
        let version = format!("..version-{}", self.version);
        std::fs::create_dir(self.dir.join(&version)).expect("a version's directory");
        for (name, content) in files {
            std::fs::write(self.dir.join(&version).join(name), content).expect("a key's content");
        }
        let next = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(&version, &next).expect("the next ..data");
        std::fs::rename(&next, self.dir.join("..data")).expect("..data swapped");
    }
}

/// Ends every client session of `role` but the caller's own, as a database administrator does after
/// a rotation (or as a failover does): the pool's connections opened with the old password are gone.
/// Returns how many there were.
pub async fn terminate_sessions(admin: &tokio_postgres::Client, role: &str) -> i64 {
    let row = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE usename = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
            &[&role],
        )
        .await
        .expect("sessions terminated");
    row.get(0)
}

/// The Ready condition's message.
pub fn ready_message(writer: &PostgresWriter) -> Option<String> {
    let condition = writer
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| &*c.type_ == "Ready")?;
    Some(condition.message.to_string())
}
