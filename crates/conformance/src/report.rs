//! What a run found, three ways: a table in the test's output, a JSON report beside the build, and
//! the figures in `docs/conformance.md` (between two markers, kept in step by the test).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::baseline::{Baseline, Verdict};
use crate::compare::Divergence;
use crate::scenario::Scenario;
use crate::{Error, Result};

pub const DOCS_BEGIN: &str = "<!-- conformance figures: written by the corpus test, do not edit by hand -->";
pub const DOCS_END: &str = "<!-- end of conformance figures -->";

/// Counts for one area.
#[derive(Debug, Default, Clone, Serialize)]
pub struct AreaFigures {
    pub scenarios: usize,
    pub steps: usize,
    pub divergences: usize,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub areas: BTreeMap<String, AreaFigures>,
    pub divergences: Vec<Divergence>,
}

impl Report {
    pub fn new(scenarios: &[Scenario], divergences: Vec<Divergence>) -> Report {
        let mut areas: BTreeMap<String, AreaFigures> = BTreeMap::new();
        for scenario in scenarios {
            let figures = areas.entry(scenario.area.clone()).or_default();
            figures.scenarios += 1;
            figures.steps += scenario.steps.len();
        }
        for divergence in &divergences {
            areas.entry(divergence.area.clone()).or_default().divergences += 1;
        }
        Report { areas, divergences }
    }

    pub fn write_json(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self).map_err(|e| Error::Write {
            path: path.into(),
            source: e.into(),
        })?;
        std::fs::write(path, json).map_err(|source| Error::Write {
            path: path.into(),
            source,
        })
    }

    /// The divergences by area, and what the verdict holds against the baseline.
    pub fn table(&self, verdict: &Verdict) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>6} {:>11}",
            "AREA", "SCENARIOS", "STEPS", "DIVERGENCES"
        );
        for (area, f) in &self.areas {
            let _ = writeln!(
                out,
                "{area:<28} {:>9} {:>6} {:>11}",
                f.scenarios, f.steps, f.divergences
            );
        }
        for d in &verdict.new {
            let show = |v: &Option<serde_json::Value>| {
                let text = v.as_ref().map_or("(absent)".to_owned(), |v| v.to_string());
                if text.chars().count() > 300 {
                    format!("{}…", text.chars().take(300).collect::<String>())
                } else {
                    text
                }
            };
            let _ = writeln!(
                out,
                "NEW  {}\n     embedded: {}\n     real:     {}",
                d.key,
                show(&d.embedded),
                show(&d.real)
            );
        }
        for key in &verdict.fixed {
            let _ = writeln!(out, "FIXED (remove from baseline.yaml)  {key}");
        }
        for key in &verdict.unexplained {
            let _ = writeln!(out, "UNEXPLAINED (give a reason in baseline.yaml)  {key}");
        }
        out
    }

    /// The figures and accepted divergences as the docs show them.
    pub fn docs_section(&self, baseline: &Baseline) -> String {
        let mut out = String::new();
        let total = |f: fn(&AreaFigures) -> usize| self.areas.values().map(f).sum::<usize>();
        let _ = writeln!(out, "| Area | Scenarios | Steps | Divergences accepted |");
        let _ = writeln!(out, "|---|---:|---:|---:|");
        for (area, f) in &self.areas {
            let _ = writeln!(
                out,
                "| {area} | {} | {} | {} |",
                f.scenarios, f.steps, f.divergences
            );
        }
        let _ = writeln!(
            out,
            "| **all** | **{}** | **{}** | **{}** |",
            total(|f| f.scenarios),
            total(|f| f.steps),
            total(|f| f.divergences)
        );
        for (area, keys) in baseline {
            let _ = writeln!(out, "\n### {area}\n");
            for (key, reason) in keys {
                let _ = writeln!(out, "- `{key}`: {reason}");
            }
        }
        out
    }
}

/// `doc` with the text between the markers replaced by `section`; `None` when the markers are missing.
pub fn with_section(doc: &str, section: &str) -> Option<String> {
    between_markers(doc, DOCS_BEGIN, DOCS_END, section)
}

/// `doc` with the text between `begin` and `end` replaced by `section`; `None` when either is missing.
pub fn between_markers(doc: &str, begin: &str, end: &str, section: &str) -> Option<String> {
    let start = doc.find(begin)? + begin.len();
    let end = doc[start..].find(end)? + start;
    Some(format!(
        "{}\n\n{}\n{}",
        &doc[..start],
        section.trim_end(),
        &doc[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_between_the_markers_is_replaced_and_the_rest_kept() {
        let doc = format!("# T\nbefore\n{DOCS_BEGIN}\nold\n{DOCS_END}\nafter\n");
        let new = with_section(&doc, "new table\n").unwrap();
        assert_eq!(
            new,
            format!("# T\nbefore\n{DOCS_BEGIN}\n\nnew table\n{DOCS_END}\nafter\n")
        );
        assert_eq!(with_section(&new, "new table\n").unwrap(), new);
        assert!(with_section("no markers", "x").is_none());
    }
}
