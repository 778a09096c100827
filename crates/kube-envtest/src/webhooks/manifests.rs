//! Webhook configurations read from the YAML a project ships (`config/webhook`), as envtest's
//! `WebhookInstallOptions.Paths` reads them: each path a file or a directory, every
//! MutatingWebhookConfiguration and ValidatingWebhookConfiguration document in them kept, every other
//! document (the webhook Service, a `kustomization.yaml`, a Secret) passed over.

use std::path::{Path, PathBuf};

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};

use crate::{
    Error, Result,
    manifests::{documents, files, text_field},
};

/// A configuration to install, and the file it was read from (for the error if the server refuses it).
#[derive(Debug, Clone)]
pub(crate) struct Read<T> {
    pub configuration: T,
    pub file: Option<PathBuf>,
}

impl<T> From<T> for Read<T> {
    fn from(configuration: T) -> Self {
        Read {
            configuration,
            file: None,
        }
    }
}

/// The configurations of every file at `paths`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Configurations {
    pub mutating: Vec<Read<MutatingWebhookConfiguration>>,
    pub validating: Vec<Read<ValidatingWebhookConfiguration>>,
}

/// Every webhook configuration at `paths` (files, or directories read as [`crate::Builder::crd_paths`]
/// reads them). A missing path is an error, as it is for CRDs: a typo would otherwise leave a test
/// without its webhooks and passing for the wrong reason.
pub(crate) fn read(paths: &[PathBuf]) -> Result<Configurations> {
    let mut read = Configurations::default();
    for path in paths {
        let listed = files(path).map_err(|reason| Error::ReadWebhooks {
            path: path.clone(),
            reason,
        })?;
        for file in listed {
            read_file(&file, &mut read)?;
        }
    }
    Ok(read)
}

const ADMISSION_V1: &str = "admissionregistration.k8s.io/v1";

fn read_file(file: &Path, read: &mut Configurations) -> Result<()> {
    let invalid = |reason: String| Error::ReadWebhooks {
        path: file.to_owned(),
        reason,
    };
    for (number, document) in documents(file).map_err(invalid)? {
        let kind = match text_field(&document, "kind") {
            Some(kind @ ("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration")) => {
                kind.to_owned()
            }
            _ => continue,
        };
        if text_field(&document, "apiVersion") != Some(ADMISSION_V1) {
            return Err(invalid(format!(
                "document {number}: a {kind} of {}, which Kubernetes 1.22 and later no longer serve: \
                 write it as {ADMISSION_V1}",
                text_field(&document, "apiVersion").unwrap_or("no apiVersion")
            )));
        }
        let not_valid = |e: serde_yaml::Error| invalid(format!("document {number}: not a valid {kind}: {e}"));
        let file = Some(file.to_owned());
        if kind == "MutatingWebhookConfiguration" {
            let configuration = serde_yaml::from_value(document).map_err(not_valid)?;
            read.mutating.push(Read { configuration, file });
        } else {
            let configuration = serde_yaml::from_value(document).map_err(not_valid)?;
            read.validating.push(Read { configuration, file });
        }
    }
    Ok(())
}
