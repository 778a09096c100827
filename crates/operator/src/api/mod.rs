//! The resource types, one file per kind.

pub mod postgres_writer;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every CRD this operator serves, in the order `operator crds` prints them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![postgres_writer::PostgresWriter::crd()]
}
