//! `scrub_json`: every string inside a JSON value, keys included, for metadata.

use super::assignment::json_field_label;
use super::redact::placeholder;
use super::Scrubber;
use serde_json::{Map, Value};
use std::borrow::Cow;

pub(crate) fn scrub_value(scrubber: &Scrubber, value: &mut Value) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(clean) = scrubber.scrub(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_value(scrubber, v)),
        Value::Object(map) => scrub_object(scrubber, map),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn scrub_object(scrubber: &Scrubber, map: &mut Map<String, Value>) {
    for (key, value) in map.iter_mut() {
        // The key is the context the value lacks on its own: `{"password": "hunter2"}`
        // is a secret although neither string is one alone.
        if let Value::String(s) = value {
            if scrubber.options().secrets {
                if let Some(label) = json_field_label(key, s) {
                    *s = placeholder(label);
                    continue;
                }
            }
        }
        scrub_value(scrubber, value);
    }
    if !map.keys().any(|k| matches!(scrubber.scrub(k), Cow::Owned(_))) {
        return;
    }
    // Rebuilt in order: removing and re-inserting a key would move it to the end.
    let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    let clean: Vec<Option<String>> = entries
        .iter()
        .map(|(k, _)| match scrubber.scrub(k) {
            Cow::Owned(clean) => Some(clean),
            Cow::Borrowed(_) => None,
        })
        .collect();
    let mut taken: std::collections::HashSet<String> =
        entries.iter().zip(&clean).filter(|(_, c)| c.is_none()).map(|((k, _), _)| k.clone()).collect();
    for ((key, value), clean) in entries.into_iter().zip(clean) {
        let key = match clean {
            None => key,
            Some(new) => {
                // Two keys may scrub to the same text; number the later ones so no
                // value is silently dropped.
                let mut key = new.clone();
                let mut n = 2;
                while taken.contains(&key) {
                    key = format!("{new} ({n})");
                    n += 1;
                }
                taken.insert(key.clone());
                key
            }
        };
        map.insert(key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_keys_keep_their_place() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let mut value: Value = serde_json::from_str(&format!(r#"{{"z":1,"{token}":2,"a":3}}"#)).unwrap();
        scrub_value(&Scrubber::default(), &mut value);
        assert_eq!(value.to_string(), r#"{"z":1,"[REDACTED:github_token]":2,"a":3}"#);
    }
}
