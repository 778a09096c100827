//! CustomResourceDefinitions read from the YAML a project ships (`config/crd`), as envtest's
//! `CRDDirectoryPaths` reads them: each path a file or a directory, every CRD document in them
//! installed, every other document (a `kustomization.yaml`, a sample) passed over.

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Deserialize;

use crate::{Error, Result};

/// A CRD to install, and the file it was read from (for the error if the server refuses it).
#[derive(Debug, Clone)]
pub(crate) struct Crd {
    pub definition: CustomResourceDefinition,
    pub file: Option<PathBuf>,
}

impl From<CustomResourceDefinition> for Crd {
    fn from(definition: CustomResourceDefinition) -> Self {
        Crd {
            definition,
            file: None,
        }
    }
}

/// Every CRD in `paths`. A directory contributes its `.yaml`, `.yml` and `.json` files, in name order
/// and not recursively (as envtest reads one); a path that does not exist is an error, since a typo in
/// it would otherwise leave a test without its kinds.
pub(crate) fn read(paths: &[PathBuf]) -> Result<Vec<Crd>> {
    let mut crds = Vec::new();
    for path in paths {
        let listed = files(path).map_err(|reason| Error::ReadCrds {
            path: path.clone(),
            reason,
        })?;
        for file in listed {
            crds.extend(crds_in(&file)?);
        }
    }
    Ok(crds)
}

/// The manifests at `path`: the file itself, or a directory's `.yaml`, `.yml` and `.json` files in
/// name order (not its subdirectories). Why not, in words an error about `path` can carry.
pub(crate) fn files(path: &Path) -> std::result::Result<Vec<PathBuf>, String> {
    let metadata = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !metadata.is_dir() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(|e| e.to_string())? {
        let file = entry.map_err(|e| e.to_string())?.path();
        let manifest = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if manifest && file.is_file() {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

/// Each document of the YAML (or JSON) file `file`, numbered from 1 as its error messages count them.
/// Why not, in words an error about `file` can carry.
pub(crate) fn documents(file: &Path) -> std::result::Result<Vec<(usize, serde_yaml::Value)>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    serde_yaml::Deserializer::from_str(&text)
        .enumerate()
        .map(|(index, document)| {
            serde_yaml::Value::deserialize(document)
                .map(|value| (index + 1, value))
                .map_err(|e| format!("document {}: {e}", index + 1))
        })
        .collect()
}

/// The text field `name` of a document (`kind`, `apiVersion`).
pub(crate) fn text_field<'a>(document: &'a serde_yaml::Value, name: &str) -> Option<&'a str> {
    document.get(name).and_then(serde_yaml::Value::as_str)
}

/// The CRDs among the documents of one file.
fn crds_in(file: &Path) -> Result<Vec<Crd>> {
    let invalid = |reason: String| Error::ReadCrds {
        path: file.to_owned(),
        reason,
    };
    let mut crds = Vec::new();
    for (number, value) in documents(file).map_err(invalid)? {
        let field = |name: &str| text_field(&value, name);
        if field("kind") != Some("CustomResourceDefinition") {
            continue;
        }
        if field("apiVersion") != Some("apiextensions.k8s.io/v1") {
            return Err(invalid(format!(
                "document {}: a CustomResourceDefinition of {}, which Kubernetes 1.22 and later no \
                 longer serve: write it as apiextensions.k8s.io/v1",
                number,
                field("apiVersion").unwrap_or("no apiVersion")
            )));
        }
        let definition = serde_yaml::from_value(value).map_err(|e| {
            invalid(format!(
                "document {}: not a CustomResourceDefinition: {e}",
                number
            ))
        })?;
        crds.push(Crd {
            definition,
            file: Some(file.to_owned()),
        });
    }
    Ok(crds)
}
