//! The specs of sig-api-machinery the tier does not run (`e2e/skips.yaml`): each entry a regular
//! expression over spec names, as Ginkgo's `--skip` takes it, with the reason it cannot or should not
//! run here. An entry that matches no spec of the suite is an error: it would hide a typo, or a spec
//! renamed upstream and now running unnoticed.

use std::path::Path;

use regex::Regex;
use serde::Deserialize;

use crate::{Error, Result};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skip {
    /// Matched anywhere in a spec's full name; Go's and Rust's regular expressions agree on what
    /// these use (literals, escapes, alternations, classes).
    pub pattern: String,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct Skips {
    entries: Vec<(Regex, Skip)>,
}

impl Skips {
    pub fn load(path: &Path) -> Result<Skips> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.into(),
            source,
        })?;
        let listed: Vec<Skip> = serde_yaml::from_str(&text).map_err(|source| Error::Parse {
            path: path.into(),
            source,
        })?;
        let entries = listed
            .into_iter()
            .map(|skip| {
                let regex = Regex::new(&skip.pattern).map_err(|source| Error::Pattern {
                    file: path.into(),
                    pattern: skip.pattern.clone(),
                    source,
                })?;
                Ok((regex, skip))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Skips { entries })
    }

    pub fn entries(&self) -> impl Iterator<Item = &Skip> {
        self.entries.iter().map(|(_, skip)| skip)
    }

    /// The first entry that skips the spec `name`, if any.
    pub fn skipping(&self, name: &str) -> Option<&Skip> {
        self.entries
            .iter()
            .find(|(regex, _)| regex.is_match(name))
            .map(|(_, skip)| skip)
    }

    /// How many of `names` each entry skips (a spec counts for the first entry that matches it), in
    /// the file's order.
    pub fn counts<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<(&Skip, usize)> {
        let mut counts = vec![0; self.entries.len()];
        for name in names {
            if let Some(i) = self.entries.iter().position(|(regex, _)| regex.is_match(name)) {
                counts[i] += 1;
            }
        }
        self.entries().zip(counts).collect()
    }

    /// The entries that match none of `names`.
    pub fn unused(&self, names: &[&str]) -> Vec<&Skip> {
        self.entries
            .iter()
            .filter(|(regex, _)| !names.iter().any(|name| regex.is_match(name)))
            .map(|(_, skip)| skip)
            .collect()
    }

    /// The entries with no reason.
    pub fn unexplained(&self) -> Vec<&Skip> {
        self.entries()
            .filter(|skip| skip.reason.trim().is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(yaml: &str) -> Skips {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skips.yaml");
        std::fs::write(&path, yaml).unwrap();
        Skips::load(&path).unwrap()
    }

    #[test]
    fn a_spec_is_skipped_by_the_first_entry_that_matches_it() {
        let skips = skips(
            "- pattern: '\\[Serial\\]'\n  reason: needs the cluster alone\n\
             - pattern: 'Webhook'\n  reason: needs a pod serving it\n\
             - pattern: 'never matches'\n  reason: stale\n",
        );
        let names = [
            "[sig-api-machinery] AdmissionWebhook [Serial] should deny",
            "[sig-api-machinery] AdmissionWebhook should mutate",
            "[sig-api-machinery] Watchers should observe",
        ];
        assert_eq!(
            skips.skipping(names[0]).unwrap().reason,
            "needs the cluster alone"
        );
        assert!(skips.skipping(names[2]).is_none());
        let counts: Vec<usize> = skips.counts(names).into_iter().map(|(_, n)| n).collect();
        assert_eq!(counts, [1, 1, 0]);
        let unused: Vec<&str> = skips.unused(&names).iter().map(|s| s.pattern.as_str()).collect();
        assert_eq!(unused, ["never matches"]);
    }

    #[test]
    fn a_pattern_that_is_not_a_regular_expression_is_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("skips.yaml");
        std::fs::write(&path, "- pattern: '[unclosed'\n  reason: x\n").unwrap();
        let error = Skips::load(&path).unwrap_err().to_string();
        assert!(
            error.contains("skips.yaml") && error.contains("[unclosed"),
            "{error}"
        );
    }
}
