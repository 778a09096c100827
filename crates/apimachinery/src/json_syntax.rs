//! What Go's encoding/json says of a body that is not JSON. kube-apiserver quotes its decoder's words
//! in the messages of bad requests (a patch, a continue token), and clients show them to people, so
//! the first syntax error is reported as Go's scanner reports it: `invalid character 'o' in literal
//! null (expecting 'u')`, `unexpected end of JSON input`.

/// Where the scanner is, as far as what it expects next.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Value,
    /// A value or `]`, right after `[`.
    ValueOrEnd,
    /// A key or `}`, right after `{`.
    KeyOrEnd,
    Key,
    /// What may follow a complete value inside the innermost container (or at the top).
    AfterValue,
    InString,
    /// After a backslash in a string.
    Escape,
    /// Hex digits of a `\u` escape still to read.
    Unicode(u8),
    /// After a leading `-`.
    Minus,
    /// After the integer part (`0` or more digits), where a fraction or exponent may start.
    Integer {
        leading_zero: bool,
    },
    /// After the decimal point, before any digit.
    Dot,
    Fraction,
    /// After `e` or `E`.
    Exponent,
    /// After the exponent's sign.
    ExponentSign,
    ExponentDigits,
    /// The rest of `true`, `false` or `null`, and which literal it is.
    Literal(&'static str, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    /// In an object, before or after a key (`key_done`: the colon was read, a value follows).
    Object {
        key_done: bool,
    },
    Array,
}

/// Go's message for the first syntax error in `data`, or `None` when `data` is one JSON value.
pub fn go_syntax_error(data: &[u8]) -> Option<String> {
    let mut stack: Vec<Container> = Vec::new();
    let mut expect = Expect::Value;
    let mut complete = false;
    // Like Go's scanner, the input is followed by one space at its end: a value cut short there (`1.`,
    // `tru`) is reported for that space, and one merely unfinished (`{"a": `) as an unexpected end.
    let mut index = 0;
    while index <= data.len() {
        let c = data.get(index).copied().unwrap_or(b' ');
        let whitespace = matches!(c, b' ' | b'\t' | b'\n' | b'\r');
        let invalid = |context: &str| Some(format!("invalid character {} {context}", quote_char(c)));
        expect = match expect {
            Expect::Value | Expect::ValueOrEnd | Expect::KeyOrEnd | Expect::Key | Expect::AfterValue
                if whitespace =>
            {
                expect
            }
            Expect::ValueOrEnd if c == b']' => end_container(&mut stack, &mut complete),
            Expect::KeyOrEnd if c == b'}' => end_container(&mut stack, &mut complete),
            Expect::Key | Expect::KeyOrEnd => match c {
                b'"' => Expect::InString,
                _ => return invalid("looking for beginning of object key string"),
            },
            Expect::Value | Expect::ValueOrEnd => match c {
                b'{' => {
                    stack.push(Container::Object { key_done: false });
                    Expect::KeyOrEnd
                }
                b'[' => {
                    stack.push(Container::Array);
                    Expect::ValueOrEnd
                }
                b'"' => Expect::InString,
                b'-' => Expect::Minus,
                b'0' => Expect::Integer { leading_zero: true },
                b'1'..=b'9' => Expect::Integer { leading_zero: false },
                b't' => Expect::Literal("true", 1),
                b'f' => Expect::Literal("false", 1),
                b'n' => Expect::Literal("null", 1),
                _ => return invalid("looking for beginning of value"),
            },
            Expect::AfterValue => match (stack.last().copied(), c) {
                (None, _) => return invalid("after top-level value"),
                (Some(Container::Object { key_done: false }), b':') => {
                    set_top(&mut stack, Container::Object { key_done: true });
                    Expect::Value
                }
                (Some(Container::Object { key_done: false }), _) => return invalid("after object key"),
                (Some(Container::Object { key_done: true }), b',') => {
                    set_top(&mut stack, Container::Object { key_done: false });
                    Expect::Key
                }
                (Some(Container::Object { key_done: true }), b'}') => {
                    end_container(&mut stack, &mut complete)
                }
                (Some(Container::Object { key_done: true }), _) => {
                    return invalid("after object key:value pair");
                }
                (Some(Container::Array), b',') => Expect::Value,
                (Some(Container::Array), b']') => end_container(&mut stack, &mut complete),
                (Some(Container::Array), _) => return invalid("after array element"),
            },
            Expect::InString => match c {
                b'"' => end_value(&stack, &mut complete),
                b'\\' => Expect::Escape,
                0..=0x1f => return invalid("in string literal"),
                _ => Expect::InString,
            },
            Expect::Escape => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Expect::InString,
                b'u' => Expect::Unicode(4),
                _ => return invalid("in string escape code"),
            },
            Expect::Unicode(left) => match c {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' if left > 1 => Expect::Unicode(left - 1),
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => Expect::InString,
                _ => return invalid("in \\u hexadecimal character escape"),
            },
            Expect::Minus => match c {
                b'0' => Expect::Integer { leading_zero: true },
                b'1'..=b'9' => Expect::Integer { leading_zero: false },
                _ => return invalid("in numeric literal"),
            },
            Expect::Integer { leading_zero } => match c {
                b'0'..=b'9' if !leading_zero => expect,
                b'.' => Expect::Dot,
                b'e' | b'E' => Expect::Exponent,
                _ => {
                    // The number ended: this byte is read again as what follows a value.
                    expect = end_value(&stack, &mut complete);
                    continue;
                }
            },
            Expect::Dot => match c {
                b'0'..=b'9' => Expect::Fraction,
                _ => return invalid("after decimal point in numeric literal"),
            },
            Expect::Fraction => match c {
                b'0'..=b'9' => expect,
                b'e' | b'E' => Expect::Exponent,
                _ => {
                    expect = end_value(&stack, &mut complete);
                    continue;
                }
            },
            Expect::Exponent | Expect::ExponentSign => match c {
                b'+' | b'-' if matches!(expect, Expect::Exponent) => Expect::ExponentSign,
                b'0'..=b'9' => Expect::ExponentDigits,
                _ => return invalid("in exponent of numeric literal"),
            },
            Expect::ExponentDigits => match c {
                b'0'..=b'9' => expect,
                _ => {
                    expect = end_value(&stack, &mut complete);
                    continue;
                }
            },
            Expect::Literal(word, at) => {
                let wanted = word.as_bytes()[at];
                if c != wanted {
                    return invalid(&format!("in literal {word} (expecting {})", quote_char(wanted)));
                }
                if at + 1 == word.len() {
                    end_value(&stack, &mut complete)
                } else {
                    Expect::Literal(word, at + 1)
                }
            }
        };
        index += 1;
    }
    if complete {
        None
    } else {
        Some("unexpected end of JSON input".to_owned())
    }
}

/// What follows a complete value: the end of the input at the top, or more of its container.
fn end_value(stack: &[Container], complete: &mut bool) -> Expect {
    if stack.is_empty() {
        *complete = true;
    }
    Expect::AfterValue
}

fn end_container(stack: &mut Vec<Container>, complete: &mut bool) -> Expect {
    stack.pop();
    end_value(stack, complete)
}

fn set_top(stack: &mut [Container], container: Container) {
    if let Some(top) = stack.last_mut() {
        *top = container;
    }
}

/// Go's `quoteChar`: the byte as a rune, quoted with single quotes as `strconv.Quote` escapes it.
fn quote_char(c: u8) -> String {
    let quoted = match c {
        b'\'' => "\\'".to_owned(),
        b'"' => "\"".to_owned(),
        b'\x07' => "\\a".to_owned(),
        b'\x08' => "\\b".to_owned(),
        b'\x0c' => "\\f".to_owned(),
        b'\n' => "\\n".to_owned(),
        b'\r' => "\\r".to_owned(),
        b'\t' => "\\t".to_owned(),
        b'\x0b' => "\\v".to_owned(),
        b'\\' => "\\\\".to_owned(),
        0..=0x1f | 0x7f => format!("\\x{c:02x}"),
        // A byte above ASCII is read as the rune of the same number: Latin-1 controls and the soft
        // hyphen are not printable, the rest are.
        0x80..=0x9f | 0xad => format!("\\u{c:04x}"),
        _ => char::from(c).to_string(),
    };
    format!("'{quoted}'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_documents_have_no_syntax_error() {
        for valid in [
            "{}",
            " [1, -2.5e+3, \"a\\u00e9\\n\", true, false, null, {\"k\": []}] ",
            "0",
            "12",
            "\"s\"",
        ] {
            assert_eq!(go_syntax_error(valid.as_bytes()), None, "{valid}");
        }
    }

    #[test]
    fn the_first_error_is_worded_as_go_words_it() {
        for (body, message) in [
            (
                "not json",
                "invalid character 'o' in literal null (expecting 'u')",
            ),
            ("", "unexpected end of JSON input"),
            (
                "{\"apiVersion\": \"v1\", \"kind\": ",
                "unexpected end of JSON input",
            ),
            ("garbage", "invalid character 'g' looking for beginning of value"),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\": 1 \"b\"}",
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                "{1: 2}",
                "invalid character '1' looking for beginning of object key string",
            ),
            ("{} x", "invalid character 'x' after top-level value"),
            ("01", "invalid character '1' after top-level value"),
            (
                "1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            ("tru", "invalid character ' ' in literal true (expecting 'e')"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            ("-x", "invalid character 'x' in numeric literal"),
            ("1e+", "invalid character ' ' in exponent of numeric literal"),
            ("[1", "unexpected end of JSON input"),
            ("\"\\q\"", "invalid character 'q' in string escape code"),
            (
                "\"\\u12g4\"",
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            ("\"a\tb\"", "invalid character '\\t' in string literal"),
            ("'", "invalid character '\\'' looking for beginning of value"),
        ] {
            assert_eq!(
                go_syntax_error(body.as_bytes()).as_deref(),
                Some(message),
                "{body}"
            );
        }
        assert_eq!(
            go_syntax_error(&[0x81, 0xab]).as_deref(),
            Some("invalid character '\\u0081' looking for beginning of value")
        );
    }
}
