//! The keys a YAML document repeats, in the words of the YAML decoder kube-apiserver uses (go-yaml v2)
//! when it decodes an apply body strictly: `line 7: key "foo" already set in map`, in the order it
//! finds them (a mapping's repeated key once its value is decoded, so what repeats inside that value
//! comes first), each on the line where the repeated key's value starts.
//!
//! serde_yaml keeps the last of repeated keys without a word and tells no lines, so the document's
//! events are read with yaml-rust2, which marks each with its line.

use std::collections::HashSet;

use yaml_rust2::{
    parser::{Event, MarkedEventReceiver, Parser},
    scanner::{Marker, TScalarStyle},
};

/// The repeated keys of `text`, one message each; none when it does not parse (its decoding fails
/// with its own error elsewhere).
pub fn repeated_yaml_keys(text: &str) -> Vec<String> {
    let mut keys = RepeatedKeys::default();
    match Parser::new_from_str(text).load(&mut keys, false) {
        Ok(()) => keys.found,
        Err(_) => Vec::new(),
    }
}

#[derive(Default)]
struct RepeatedKeys {
    open: Vec<Frame>,
    found: Vec<String>,
}

enum Frame {
    Sequence,
    Mapping {
        keys: HashSet<String>,
        /// The key whose value is being read (none for a key that is itself a collection).
        key: Option<Option<String>>,
        /// The line the value being read starts on.
        value_line: usize,
    },
}

impl RepeatedKeys {
    /// A node begins at `mark`: the line a mapping's value starts on is where a repetition is named.
    fn node_starts(&mut self, mark: Marker) {
        if let Some(Frame::Mapping {
            key: Some(_),
            value_line,
            ..
        }) = self.open.last_mut()
        {
            *value_line = mark.line();
        }
    }

    /// A node ended; `key` is what it is as a mapping's key (a scalar's resolved value).
    fn node_ends(&mut self, key: Option<String>) {
        let Some(Frame::Mapping {
            keys,
            key: reading,
            value_line,
        }) = self.open.last_mut()
        else {
            return;
        };
        match reading.take() {
            // The node was a key: its value comes next.
            None => *reading = Some(key),
            // The node was a value: its key is now set in the map.
            Some(Some(set)) => {
                if !keys.insert(set.clone()) {
                    self.found
                        .push(format!("line {value_line}: key {set} already set in map"));
                }
            }
            Some(None) => {}
        }
    }
}

impl MarkedEventReceiver for RepeatedKeys {
    fn on_event(&mut self, event: Event, mark: Marker) {
        match event {
            Event::Scalar(text, style, ..) => {
                self.node_starts(mark);
                self.node_ends(Some(go_key(&text, style)));
            }
            Event::Alias(_) => {
                self.node_starts(mark);
                self.node_ends(None);
            }
            Event::MappingStart(..) => {
                self.node_starts(mark);
                self.open.push(Frame::Mapping {
                    keys: HashSet::new(),
                    key: None,
                    value_line: mark.line(),
                });
            }
            Event::SequenceStart(..) => {
                self.node_starts(mark);
                self.open.push(Frame::Sequence);
            }
            Event::MappingEnd | Event::SequenceEnd => {
                self.open.pop();
                self.node_ends(None);
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}

/// A key as go-yaml resolves and Go's `%#v` prints it: a plain scalar that reads as a number, a
/// boolean or null is one, anything else a quoted string.
fn go_key(text: &str, style: TScalarStyle) -> String {
    if style == TScalarStyle::Plain {
        match text {
            "~" | "null" | "Null" | "NULL" | "" => return "<nil>".to_owned(),
            "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "y" | "Y" => {
                return "true".to_owned();
            }
            "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "n" | "N" => {
                return "false".to_owned();
            }
            _ => {}
        }
        if let Ok(number) = text.parse::<i64>() {
            return number.to_string();
        }
        if let Ok(number) = text.parse::<f64>()
            && text.chars().any(|c| c.is_ascii_digit())
        {
            return number.to_string();
        }
    }
    format!("{text:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_named_by_their_value_line_inner_ones_first() {
        let text = "apiVersion: v1\nkind: ConfigMap\ndata:\n  foo: a\n  foo: b\nmetadata:\n  name: x\nmetadata:\n  labels:\n    a: 1\n    a: 2\n";
        assert_eq!(
            repeated_yaml_keys(text),
            [
                r#"line 5: key "foo" already set in map"#,
                r#"line 11: key "a" already set in map"#,
                r#"line 9: key "metadata" already set in map"#
            ]
        );
    }

    #[test]
    fn json_is_yaml_and_distinct_keys_are_no_problem() {
        assert_eq!(
            repeated_yaml_keys(r#"{"a": 1, "b": {"c": 1}, "a": 2, "1": 0, "1": 0}"#),
            [
                r#"line 1: key "a" already set in map"#,
                r#"line 1: key "1" already set in map"#
            ]
        );
        assert!(repeated_yaml_keys("a: [1, 1]\nb: {x: 1}\n").is_empty());
    }
}
