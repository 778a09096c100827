//! The OpenAPI documents, kept once built: building one walks every served type's schema (a tenth of
//! a second and more), and clients fetch them on every start. They are rebuilt when the served types
//! change, which the registry's generation tells.

use std::{collections::HashMap, sync::Mutex};

use axum::{
    body::Body,
    http::{HeaderValue, header},
    response::Response,
};
use bytes::Bytes;

use crate::store::Registry;

/// Which document, in which encoding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Document {
    V2Json,
    V2Protobuf,
    V3Index,
    V3 { group: String, version: String },
}

#[derive(Debug, Default)]
pub struct OpenApiCache {
    /// The registry generation the documents were built from, and the documents.
    built: Mutex<(u64, HashMap<Document, Bytes>)>,
}

impl OpenApiCache {
    /// The document `which` of `registry`, built by `build` unless kept from the same generation;
    /// `None` when `build` finds no such document (nothing is kept for it).
    pub fn get(
        &self,
        registry: &Registry,
        which: Document,
        build: impl FnOnce(&Registry) -> Option<Vec<u8>>,
    ) -> Option<Bytes> {
        let generation = registry.generation();
        {
            let built = self.built.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if built.0 == generation
                && let Some(document) = built.1.get(&which)
            {
                return Some(document.clone());
            }
        }
        // Built outside the lock: other documents stay served meanwhile.
        let document = Bytes::from(build(registry)?);
        let mut built = self.built.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if built.0 != generation {
            // Kept only if no newer generation's documents are kept already.
            if built.0 > generation {
                return Some(document);
            }
            *built = (generation, HashMap::new());
        }
        built.1.insert(which, document.clone());
        Some(document)
    }
}

pub fn response(body: Bytes, content_type: &'static str) -> Response {
    let mut response = Response::new(Body::from(body));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn d7_documents_are_built_once_per_set_of_served_types() {
        let cache = OpenApiCache::default();
        let mut registry = Registry::default();
        let builds = Cell::new(0);
        let build = |_: &Registry| {
            builds.set(builds.get() + 1);
            Some(format!("built {}", builds.get()).into_bytes())
        };
        let first = cache.get(&registry, Document::V3Index, build);
        let again = cache.get(&registry, Document::V3Index, build);
        assert_eq!((first.clone(), builds.get()), (again, 1));
        // Another document is built on its own.
        cache.get(&registry, Document::V2Json, build);
        assert_eq!(builds.get(), 2);
        // A CRD's types served (or gone) make every document stale.
        registry.set_crd("widgets.example.com", Vec::new());
        let rebuilt = cache.get(&registry, Document::V3Index, build);
        assert_eq!(builds.get(), 3);
        assert_ne!(rebuilt, first);
        // A document that does not exist is not kept.
        let missing = |_: &Registry| None;
        assert_eq!(
            cache.get(
                &registry,
                Document::V3 {
                    group: "nope".into(),
                    version: "v1".into()
                },
                missing
            ),
            None
        );
    }
}
