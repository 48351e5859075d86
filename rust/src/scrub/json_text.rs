//! `scrub_json_str`: the strings inside JSON text, scrubbed where they stand. Only
//! the string literals that change are rewritten; numbers keep their exact text
//! (`18446744073709551617` stays an integer, `1.5e+300` keeps its spelling), keys keep
//! their order, and whitespace and every other byte stay as given. Parsing into a
//! `serde_json::Value` and writing it back would lose both.
//!
//! The walk is a flat token scan with an explicit stack, so nesting depth costs no
//! recursion. Text that is not JSON is scrubbed as plain text instead, so a secret
//! never passes because its container was malformed.

use super::assignment::json_field_label;
use super::redact::placeholder;
use super::Scrubber;
use std::borrow::Cow;
use std::collections::HashSet;

/// One string literal: `text[start..end]`, quotes included.
struct Literal {
    start: usize,
    end: usize,
    role: Role,
}

#[derive(Clone, Copy)]
enum Role {
    /// A key of the object numbered `object`.
    Key { object: usize },
    /// A value; `key` is the literal index of its key when it is an object member.
    Value { key: Option<usize> },
}

enum Frame {
    Object { expect_key: bool, last_key: Option<usize>, id: usize },
    Array,
}

pub(crate) fn scrub_json_text<'a>(scrubber: &Scrubber, text: &'a str) -> Cow<'a, str> {
    let Some(literals) = scan(text) else {
        return scrubber.scrub(text);
    };
    match replacements(scrubber, text, &literals) {
        Some(changes) if changes.is_empty() => Cow::Borrowed(text),
        Some(changes) => Cow::Owned(apply(text, &literals, &changes)),
        None => scrubber.scrub(text),
    }
}

/// Every string literal in `text` with its role, or `None` if `text` is not JSON.
fn scan(text: &str) -> Option<Vec<Literal>> {
    let bytes = text.as_bytes();
    let mut literals = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut objects = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'{' => {
                stack.push(Frame::Object { expect_key: true, last_key: None, id: objects });
                objects += 1;
                i += 1;
            }
            b'[' => {
                stack.push(Frame::Array);
                i += 1;
            }
            b'}' => {
                matches!(stack.pop(), Some(Frame::Object { .. })).then_some(())?;
                i += 1;
            }
            b']' => {
                matches!(stack.pop(), Some(Frame::Array)).then_some(())?;
                i += 1;
            }
            b',' | b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = bytes[i] == b',';
                }
                i += 1;
            }
            b'"' => {
                let end = string_end(bytes, i)?;
                let index = literals.len();
                let role = match stack.last_mut() {
                    Some(Frame::Object { expect_key: true, last_key, id, .. }) => {
                        *last_key = Some(index);
                        Role::Key { object: *id }
                    }
                    Some(Frame::Object { last_key, .. }) => Role::Value { key: *last_key },
                    _ => Role::Value { key: None },
                };
                literals.push(Literal { start: i, end, role });
                i = end;
            }
            // Numbers, true, false, null: their bytes are never touched.
            _ => {
                let rest = &bytes[i..];
                let n = rest
                    .iter()
                    .take_while(|b| {
                        !matches!(
                            b,
                            b' ' | b'\t' | b'\n' | b'\r' | b',' | b':' | b']' | b'}' | b'"' | b'{' | b'['
                        )
                    })
                    .count();
                i += n.max(1);
            }
        }
    }
    stack.is_empty().then_some(literals)
}

/// The byte after the closing quote of the string starting at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// A literal's text, unescaped (borrowed when it has no escapes).
fn decode<'t>(text: &'t str, lit: &Literal) -> Option<Cow<'t, str>> {
    let raw = &text[lit.start..lit.end];
    if raw.contains('\\') {
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(&raw[1..raw.len() - 1]))
    }
}

/// The new value of each literal that changes, by literal index.
fn replacements(scrubber: &Scrubber, text: &str, literals: &[Literal]) -> Option<Vec<(usize, String)>> {
    let mut changes = Vec::new();
    let mut renamed_objects: Vec<usize> = Vec::new();
    for (index, lit) in literals.iter().enumerate() {
        let value = decode(text, lit)?;
        match lit.role {
            Role::Value { key } => {
                // The key is the context the value lacks on its own:
                // `{"password": "hunter2"}` is a secret although neither string is.
                if scrubber.options().secrets {
                    if let Some(key) = key {
                        let name = decode(text, &literals[key])?;
                        if let Some(label) = json_field_label(&name, &value) {
                            changes.push((index, placeholder(label)));
                            continue;
                        }
                    }
                }
                if let Cow::Owned(clean) = scrubber.scrub(&value) {
                    changes.push((index, clean));
                }
            }
            Role::Key { object } => {
                if let Cow::Owned(clean) = scrubber.scrub(&value) {
                    changes.push((index, clean));
                    if !renamed_objects.contains(&object) {
                        renamed_objects.push(object);
                    }
                }
            }
        }
    }
    if !renamed_objects.is_empty() {
        number_clashing_keys(text, literals, &renamed_objects, &mut changes)?;
    }
    Some(changes)
}

/// Two keys of one object may scrub to the same text; the later ones are numbered
/// (`[REDACTED:github_token] (2)`) so no member is silently shadowed.
fn number_clashing_keys(
    text: &str,
    literals: &[Literal],
    objects: &[usize],
    changes: &mut [(usize, String)],
) -> Option<()> {
    for &object in objects {
        let keys: Vec<usize> = literals
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l.role, Role::Key { object: o } if o == object))
            .map(|(i, _)| i)
            .collect();
        let renamed: HashSet<usize> = changes.iter().map(|(i, _)| *i).filter(|i| keys.contains(i)).collect();
        let mut taken: HashSet<String> = HashSet::new();
        for &k in keys.iter().filter(|k| !renamed.contains(k)) {
            taken.insert(decode(text, &literals[k])?.into_owned());
        }
        for (_, new) in changes.iter_mut().filter(|(i, _)| renamed.contains(i)) {
            let base = new.clone();
            let mut n = 2;
            while taken.contains(new.as_str()) {
                *new = format!("{base} ({n})");
                n += 1;
            }
            taken.insert(new.clone());
        }
    }
    Some(())
}

/// `text` with each changed literal replaced by its new value, JSON-encoded.
fn apply(text: &str, literals: &[Literal], changes: &[(usize, String)]) -> String {
    let mut out = String::with_capacity(text.len() + changes.len() * 16);
    let mut at = 0;
    for (index, new) in changes {
        let lit = &literals[*index];
        out.push_str(&text[at..lit.start]);
        // Encoding a string cannot fail.
        out.push_str(&serde_json::to_string(new).unwrap_or_else(|_| "\"\"".to_owned()));
        at = lit.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

    fn scrub(text: &str) -> Cow<'_, str> {
        scrub_json_text(&Scrubber::default(), text)
    }

    #[test]
    fn numbers_order_and_spacing_are_kept() {
        let text = format!(
            "{{\"z\": 1, \"a\":18446744073709551617,\"f\":1.5e+300, \"n\":-0.0,\"tok\":\"{TOKEN}\" }}"
        );
        assert_eq!(
            scrub(&text),
            "{\"z\": 1, \"a\":18446744073709551617,\"f\":1.5e+300, \"n\":-0.0,\"tok\":\"[REDACTED:github_token]\" }"
        );
    }

    #[test]
    fn clean_json_is_borrowed() {
        let text = r#"{"b":[1,2,{"c":"plain \"text\" é"}],"a":null,"d":true}"#;
        assert!(matches!(scrub(text), Cow::Borrowed(_)));
    }

    #[test]
    fn keys_give_context_and_are_scrubbed_without_clashing() {
        let text = format!(
            r#"{{"password":"hunter2!x","nested":[{{"api_key":"a8f3b2c9d1e07f6a"}},"pw"],"{TOKEN}":1,"[REDACTED:github_token]":2,"title":"hunter2!x"}}"#
        );
        assert_eq!(
            scrub(&text),
            r#"{"password":"[REDACTED:password_assignment]","nested":[{"api_key":"[REDACTED:secret_assignment]"},"pw"],"[REDACTED:github_token] (2)":1,"[REDACTED:github_token]":2,"title":"hunter2!x"}"#
        );
    }

    #[test]
    fn escaped_strings_are_decoded_before_matching() {
        // `\u005f` is `_`: the token is whole once decoded.
        let text = r#"{"note":"use ghp\u005f0123456789abcdefghijABCDEFGHIJ012345\nnow"}"#;
        assert_eq!(scrub(text), r#"{"note":"use [REDACTED:github_token]\nnow"}"#);
    }

    #[test]
    fn deep_nesting_needs_no_recursion() {
        let depth = 100_000;
        let text = format!("{}\"{TOKEN}\"{}", "[".repeat(depth), "]".repeat(depth));
        let out = scrub(&text);
        assert!(!out.contains(TOKEN) && out.starts_with("[[[") && out.ends_with("]]]"));
    }

    #[test]
    fn text_that_is_not_json_is_scrubbed_as_text() {
        let text = format!("{{\"a\": \"{TOKEN}\"");
        assert_eq!(scrub(&text), "{\"a\": \"[REDACTED:github_token]\"");
    }
}
