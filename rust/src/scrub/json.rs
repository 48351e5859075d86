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
    let renamed: Vec<(String, String)> = map
        .keys()
        .filter_map(|k| match scrubber.scrub(k) {
            Cow::Owned(clean) => Some((k.clone(), clean)),
            Cow::Borrowed(_) => None,
        })
        .collect();
    for (old, new) in renamed {
        if let Some(v) = map.remove(&old) {
            // Two keys may scrub to the same text; number the later ones so no value
            // is silently dropped.
            let mut key = new.clone();
            let mut n = 2;
            while map.contains_key(&key) {
                key = format!("{new} ({n})");
                n += 1;
            }
            map.insert(key, v);
        }
    }
}
