//! The order in which kube-apiserver's decoder names the problems of a body decoded into a Go type:
//! it notes each one as it meets it, so they come in the order the body holds them.

use std::{collections::HashSet, fmt};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// What strict decoding into a Go type found in `document` (JSON), given the fields the type lacks
/// (`unknown`), as kube-apiserver's decoder reports it: in the order the document holds them, each
/// unknown field at its first occurrence and each repeated field at its second, nothing below an
/// unknown field, and each problem once. `None` when the document is not JSON.
pub fn typed_field_problems(document: &[u8], unknown: &[String]) -> Option<Vec<String>> {
    let mut walk = OrderedWalk {
        unknown: unknown.iter().map(String::as_str).collect(),
        problems: Vec::new(),
    };
    let mut deserializer = serde_json::Deserializer::from_slice(document);
    Ordered {
        path: String::new(),
        walk: &mut walk,
    }
    .deserialize(&mut deserializer)
    .ok()?;
    Some(walk.problems)
}

struct OrderedWalk<'u> {
    unknown: HashSet<&'u str>,
    problems: Vec<String>,
}

impl OrderedWalk<'_> {
    fn note(&mut self, problem: String) {
        if !self.problems.contains(&problem) {
            self.problems.push(problem);
        }
    }
}

/// One value of the document at `path`, walked for [`typed_field_problems`].
struct Ordered<'w, 'u> {
    path: String,
    walk: &'w mut OrderedWalk<'u>,
}

impl<'de> DeserializeSeed<'de> for Ordered<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Ordered<'_, '_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while seq
            .next_element_seed(Ordered {
                path: format!("{}[{index}]", self.path),
                walk: &mut *self.walk,
            })?
            .is_some()
        {
            index += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = match self.path.is_empty() {
                true => key.clone(),
                false => format!("{}.{key}", self.path),
            };
            let repeated = !seen.insert(key);
            if self.walk.unknown.contains(path.as_str()) {
                // Go skips an unknown field's value, and names the field once however often it comes.
                self.walk.note(format!("unknown field \"{path}\""));
                map.next_value::<serde::de::IgnoredAny>()?;
                continue;
            }
            if repeated {
                self.walk.note(format!("duplicate field \"{path}\""));
            }
            map.next_value_seed(Ordered {
                path,
                walk: &mut *self.walk,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_problems_come_in_document_order_each_once() {
        let body = br#"{"spec": {"zz": 1, "replicas": 2, "replicas": 3, "aa": {"x": 1, "x": 2}, "zz": 4,
            "template": {"spec": {"containers": [{"bar": true}]}}}}"#;
        let unknown = [
            "spec.aa".to_owned(),
            "spec.zz".to_owned(),
            "spec.template.spec.containers[0].bar".to_owned(),
        ];
        assert_eq!(
            typed_field_problems(body, &unknown).unwrap(),
            [
                r#"unknown field "spec.zz""#,
                r#"duplicate field "spec.replicas""#,
                r#"unknown field "spec.aa""#,
                r#"unknown field "spec.template.spec.containers[0].bar""#
            ]
        );
    }
}
