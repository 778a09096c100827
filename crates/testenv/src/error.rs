//! What can stop a control plane from starting.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the embedded API server did not start: {0}")]
    Embedded(#[source] Box<apiserver::Error>),

    #[error(
        "{program} is not built in {dir}: run `make control-plane` (it builds the upstream control plane \
         from testenv/control-plane, cached)"
    )]
    NotBuilt { program: &'static str, dir: PathBuf },

    #[error(
        "no cluster runs (nothing in {dir}): the cluster tier's tests run in `make test`, or start it \
         with testenv/cluster/images.sh && testenv/cluster/up.sh (as root) and stop it with \
         testenv/cluster/down.sh"
    )]
    NoCluster { dir: PathBuf },

    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },

    #[error("{program} exited during start-up ({status}); the end of its log:\n{log}")]
    Exited {
        program: &'static str,
        status: std::process::ExitStatus,
        log: String,
    },

    #[error(
        "the control plane was not ready within {seconds} s ({waiting_for}); the end of kube-apiserver's log:\n{log}"
    )]
    NotReady {
        seconds: u64,
        waiting_for: String,
        log: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
