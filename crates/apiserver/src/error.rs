//! The one error type of the API server. Every variant becomes a `Status` response (C6).

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Machinery(#[from] apimachinery::Error),
    #[error("io error: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
