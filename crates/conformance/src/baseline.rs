//! The accepted divergences: `baseline.yaml`, by area, each key with a one-line reason.
//!
//! A run passes when what diverges is exactly what the baseline lists: a new divergence fails it, and
//! so does a listed one that no longer diverges (the fix shrinks the baseline). A reason must say why;
//! the placeholder a bless writes for a new entry fails until someone replaces it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::compare::Divergence;
use crate::{Error, Result};

/// What a bless writes for a divergence nobody has explained yet; a run refuses it.
pub const UNEXPLAINED: &str = "TODO: say why this divergence is accepted, or fix it";

/// area → key → reason.
pub type Baseline = BTreeMap<String, BTreeMap<String, String>>;

pub fn load(path: &Path) -> Result<Baseline> {
    if !path.exists() {
        return Ok(Baseline::new());
    }
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.into(),
        source,
    })?;
    let baseline: Option<Baseline> = serde_yaml::from_str(&text).map_err(|source| Error::Parse {
        path: path.into(),
        source,
    })?;
    Ok(baseline.unwrap_or_default())
}

/// How a run's divergences stand against the baseline.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Diverge, not listed.
    pub new: Vec<Divergence>,
    /// Listed, no longer diverge.
    pub fixed: Vec<String>,
    /// Listed with the placeholder reason.
    pub unexplained: Vec<String>,
}

impl Verdict {
    pub fn passes(&self) -> bool {
        self.new.is_empty() && self.fixed.is_empty() && self.unexplained.is_empty()
    }
}

pub fn judge(baseline: &Baseline, observed: &[Divergence]) -> Verdict {
    let listed: BTreeMap<&str, &str> = baseline
        .values()
        .flat_map(|keys| keys.iter().map(|(k, r)| (k.as_str(), r.as_str())))
        .collect();
    let seen: BTreeSet<&str> = observed.iter().map(|d| d.key.as_str()).collect();
    Verdict {
        new: observed
            .iter()
            .filter(|d| !listed.contains_key(d.key.as_str()))
            .cloned()
            .collect(),
        fixed: listed
            .keys()
            .filter(|k| !seen.contains(*k))
            .map(|k| (*k).to_owned())
            .collect(),
        unexplained: listed
            .iter()
            .filter(|(k, r)| seen.contains(*k) && (r.trim().is_empty() || **r == UNEXPLAINED))
            .map(|(k, _)| (*k).to_owned())
            .collect(),
    }
}

/// The baseline that accepts exactly `observed`: reasons kept for what was listed, the placeholder for
/// the rest.
pub fn blessed(baseline: &Baseline, observed: &[Divergence]) -> Baseline {
    let reasons: BTreeMap<&str, &str> = baseline
        .values()
        .flat_map(|keys| keys.iter().map(|(k, r)| (k.as_str(), r.as_str())))
        .collect();
    let mut out = Baseline::new();
    for divergence in observed {
        let reason = reasons
            .get(divergence.key.as_str())
            .copied()
            .unwrap_or(UNEXPLAINED);
        out.entry(divergence.area.clone())
            .or_default()
            .insert(divergence.key.clone(), reason.to_owned());
    }
    out
}

pub fn write(path: &Path, baseline: &Baseline) -> Result<()> {
    let yaml = serde_yaml::to_string(baseline).map_err(|source| Error::Parse {
        path: path.into(),
        source,
    })?;
    let text = format!(
        "# Divergences of the embedded API server from the real kube-apiserver that the project accepts,\n\
         # by area: `<scenario>/<step> <where>: <why>`. See docs/conformance.md.\n{yaml}"
    );
    std::fs::write(path, text).map_err(|source| Error::Write {
        path: path.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn divergence(key: &str) -> Divergence {
        Divergence {
            key: key.into(),
            area: "a".into(),
            embedded: None,
            real: None,
        }
    }

    #[test]
    fn new_fixed_and_unexplained_divergences_each_fail_a_run() {
        let baseline: Baseline = serde_yaml::from_str(
            "a:\n  s/1 status: needs a kubelet\n  s/2 status: fixed since\n  s/3 body/x: 'TODO: say why this divergence is accepted, or fix it'\n",
        )
        .unwrap();
        let verdict = judge(
            &baseline,
            &[
                divergence("s/1 status"),
                divergence("s/3 body/x"),
                divergence("s/4 status"),
            ],
        );
        assert_eq!(verdict.new, [divergence("s/4 status")]);
        assert_eq!(verdict.fixed, ["s/2 status"]);
        assert_eq!(verdict.unexplained, ["s/3 body/x"]);
        assert!(!verdict.passes());
        let explained: Baseline = serde_yaml::from_str("a:\n  s/1 status: needs a kubelet\n").unwrap();
        assert!(judge(&explained, &[divergence("s/1 status")]).passes());
    }

    #[test]
    fn a_bless_keeps_reasons_and_marks_the_rest() {
        let baseline: Baseline = serde_yaml::from_str("a:\n  s/1 status: needs a kubelet\n").unwrap();
        let out = blessed(&baseline, &[divergence("s/1 status"), divergence("s/2 status")]);
        assert_eq!(out["a"]["s/1 status"], "needs a kubelet");
        assert_eq!(out["a"]["s/2 status"], UNEXPLAINED);
    }
}
