//! `password=...`, `api_key: ...`, `--token ...`: secrets found by the name they are
//! assigned to rather than by their shape.
//!
//! The hard part is source code, where the same syntax assigns variables:
//! `password = os.environ["PW"]`, `let token = next_token();`, `password: str`.
//! So a value is redacted only when it is a literal: a quoted string, or an unquoted
//! value that cannot be an expression (no call, index, field access, type name,
//! keyword, or bare identifier unless the line is clearly a config file). Names are
//! split into words so `password_file`, `token_type` or `is_password` (which hold
//! paths, kinds and flags, not secrets) are left alone.
//!
//! Known gaps, on purpose: passphrases containing spaces, and a bare word assigned in
//! an INI file (`password = letmein`), which is indistinguishable from a variable.

use super::entropy::looks_like_secret;
use super::names::{mentions_password, names, Family};
use super::rule::{Rule, Verdict, ASSIGNMENT};
use super::validate::{
    has_digit, has_letter, has_mixed_case, is_path, is_placeholder_word, is_reference, is_uri,
};
use regex::Captures;

// The name regexes only gate on a keyword inside an identifier; `Family` checks
// decide. The lazy prefix keeps the whole identifier (`spring.datasource.password`).
macro_rules! pw_name {
    () => {
        r"(?P<name>[A-Za-z0-9_.\-]{0,40}?(?i:pass|pw)[A-Za-z0-9_.\-]{0,30})"
    };
}
macro_rules! secret_name {
    () => {
        r"(?P<name>[A-Za-z0-9_.\-]{0,40}?(?i:secret|token|key|auth|cred)[A-Za-z0-9_.\-]{0,30})"
    };
}
// Flags have no dots: `--db-password`, `--api-key`.
macro_rules! pw_flag {
    () => {
        r"(?P<name>[A-Za-z0-9_\-]{0,40}?(?i:pass|pw)[A-Za-z0-9_\-]{0,30})"
    };
}
macro_rules! secret_flag {
    () => {
        r"(?P<name>[A-Za-z0-9_\-]{0,40}?(?i:secret|token|key|auth|cred)[A-Za-z0-9_\-]{0,30})"
    };
}
// A name starts after a character that cannot be part of it; not after `$`, which
// makes it a shell variable being read (`"$pass" = "link"`), not assigned.
macro_rules! name_start {
    () => {
        r"(?:(?m:^)|[^$A-Za-z0-9_.\-])"
    };
}
// `name = "v"`, `"name": 'v'`, `name => "v"`, `['name'] = "v"`, `\"name\": \"v\"`.
macro_rules! quoted_tail {
    () => {
        r#"(?:\\?["'])?\]?[ \t]*(?::=|=>|=|:)[ \t]*(?:[rRbBuU]{1,2})?(?:"(?P<s1>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|`(?P<s3>[^`\r\n]+)`|\\"(?P<s4>[^"\\\r\n]+)\\")"#
    };
}
// `NAME=value` or `name = value` alone on its line (env, INI, properties, Dockerfile).
macro_rules! env_head {
    () => {
        r"(?m)^[ \t]*(?:(?:export|set|setenv|ENV|ARG)[ \t]+)?"
    };
}
macro_rules! env_tail {
    () => {
        r#"[ \t]*(?::=|=)[ \t]*(?P<s1>[^\s"'`]+)[ \t]*(?:[ \t]#[^\r\n]*)?\r?$"#
    };
}
// `name: value` alone on its line (YAML, docker-compose, HTTP-ish headers).
macro_rules! yaml_head {
    () => {
        r#"(?m)^[ \t]*(?:-[ \t]+)?(?P<q>["']?)"#
    };
}
macro_rules! yaml_tail {
    () => {
        r#"["']?[ \t]*:[ \t]+(?P<s1>[^\s"'`]+)[ \t]*(?:[ \t]#[^\r\n]*)?\r?$"#
    };
}
macro_rules! flag_head {
    () => {
        r#"(?:^|[ \t"'=(])--?"#
    };
}
macro_rules! flag_tail {
    () => {
        r#"(?:=|[ \t]+)(?:"(?P<s1>[^"\r\n]+)"|'(?P<s2>[^'\r\n]+)'|(?P<s3>[^\s"'`]+))"#
    };
}

const PW: &[&str] = &["pass", "pw"];
const SECRET: &[&str] = &["secret", "token", "key", "auth", "cred"];
const PW_LABEL: &str = "password_assignment";
const SECRET_LABEL: &str = "secret_assignment";

pub(crate) const RULES: &[Rule] = &[
    Rule::secret(PW_LABEL, ASSIGNMENT + 1, concat!(name_start!(), pw_name!(), quoted_tail!()))
        .keywords(PW)
        .check(pw_quoted),
    Rule::secret(PW_LABEL, ASSIGNMENT + 1, concat!(env_head!(), pw_name!(), env_tail!()))
        .keywords(PW)
        .check(pw_env),
    Rule::secret(PW_LABEL, ASSIGNMENT + 1, concat!(yaml_head!(), pw_name!(), yaml_tail!()))
        .keywords(PW)
        .check(pw_yaml),
    Rule::secret(PW_LABEL, ASSIGNMENT + 1, concat!(flag_head!(), pw_flag!(), flag_tail!()))
        .keywords(PW)
        .check(pw_flag),
    // `mysql -u root -pS3cret`: the one common CLI that glues the password to `-p`.
    Rule::secret(
        PW_LABEL,
        ASSIGNMENT + 1,
        r"\bmysql(?:dump|admin|import|sh)?\b[^\r\n]*?[ \t]-p(?P<s1>[^\s\-][^\s]*)",
    )
    .keywords(&["mysql"])
    .check(mysql),
    Rule::secret(SECRET_LABEL, ASSIGNMENT, concat!(name_start!(), secret_name!(), quoted_tail!()))
        .keywords(SECRET)
        .check(secret_quoted),
    Rule::secret(SECRET_LABEL, ASSIGNMENT, concat!(env_head!(), secret_name!(), env_tail!()))
        .keywords(SECRET)
        .check(secret_unquoted),
    Rule::secret(SECRET_LABEL, ASSIGNMENT, concat!(yaml_head!(), secret_name!(), yaml_tail!()))
        .keywords(SECRET)
        .check(secret_unquoted),
    Rule::secret(SECRET_LABEL, ASSIGNMENT, concat!(flag_head!(), secret_flag!(), flag_tail!()))
        .keywords(SECRET)
        .check(secret_flag),
];

/// The label a JSON object field gets when its key names a secret and its string
/// value is a literal of the right kind (`{"password": "hunter2"}`); used by
/// `scrub_json`, where the key and the value are separate strings.
pub(crate) fn json_field_label(key: &str, value: &str) -> Option<&'static str> {
    if names(key, Family::Password) && password_literal(key, value) {
        Some(PW_LABEL)
    } else if names(key, Family::Secret) && secret_literal(value) {
        Some(SECRET_LABEL)
    } else {
        None
    }
}

fn verdict(ok: bool) -> Verdict {
    if ok {
        Verdict::Accept
    } else {
        Verdict::Reject
    }
}

fn group<'h>(caps: &Captures<'h>, name: &str) -> &'h str {
    caps.name(name).map_or("", |m| m.as_str())
}

/// Whether a flag's value was written in quotes (`s3` is the unquoted form).
fn quoted(caps: &Captures<'_>) -> bool {
    caps.name("s3").is_none()
}

fn pw_quoted(caps: &Captures<'_>, v: &str) -> Verdict {
    let name = group(caps, "name");
    verdict(names(name, Family::Password) && password_literal(name, v))
}

fn pw_env(caps: &Captures<'_>, v: &str) -> Verdict {
    let name = group(caps, "name");
    if !names(name, Family::Password) || !unquoted_literal(v) {
        return verdict(false);
    }
    // `DB_PASSWORD=letmein` (upper case, no spaces) is an env file; `password = pw`
    // with a lowercase name is as likely a variable, so it needs a digit as well.
    let env_style = !name.bytes().any(|b| b.is_ascii_lowercase()) && glue(caps, "name") == "=";
    verdict(env_style || !is_identifier(v) || password_like_word(name, v))
}

fn pw_yaml(caps: &Captures<'_>, v: &str) -> Verdict {
    let name = group(caps, "name");
    if !names(name, Family::Password) || !unquoted_literal(v) || is_type_name(v) {
        return verdict(false);
    }
    // A quoted key with a bare identifier is a dict literal in code: `"password": pw`.
    let code_dict = !group(caps, "q").is_empty() && is_identifier(v);
    verdict(!code_dict && v.chars().count() >= 3)
}

fn pw_flag(caps: &Captures<'_>, v: &str) -> Verdict {
    let name = group(caps, "name");
    if !names(name, Family::Password) || v.starts_with('-') || is_metavar(v) {
        return verdict(false);
    }
    if quoted(caps) {
        return verdict(password_literal(name, v));
    }
    // Prose mentions flags too ("pass --password to log in"): a bare lowercase word is
    // more likely English than a password.
    let strong = has_digit(v) || has_mixed_case(v) || v.bytes().any(is_symbol);
    verdict(unquoted_literal(v) && (strong || v.len() >= 12))
}

/// A value that reads as a password with no syntax around it (prose, bare command
/// arguments): letters with digits or symbols, 4 to 128 bytes, a literal, and not a
/// placeholder word.
pub(crate) fn strong_password(v: &str) -> bool {
    (4..=128).contains(&v.len())
        && has_letter(v)
        && (has_digit(v) || v.bytes().any(is_symbol))
        && unquoted_literal(v)
        && !is_placeholder_word(v)
}

fn mysql(_: &Captures<'_>, v: &str) -> Verdict {
    verdict(!is_reference(v))
}

fn secret_quoted(caps: &Captures<'_>, v: &str) -> Verdict {
    verdict(names(group(caps, "name"), Family::Secret) && secret_literal(v))
}

fn secret_unquoted(caps: &Captures<'_>, v: &str) -> Verdict {
    verdict(names(group(caps, "name"), Family::Secret) && unquoted_literal(v) && secret_literal(v))
}

fn secret_flag(caps: &Captures<'_>, v: &str) -> Verdict {
    let ok = names(group(caps, "name"), Family::Secret)
        && !v.starts_with('-')
        && (quoted(caps) || unquoted_literal(v))
        && secret_literal(v);
    verdict(ok)
}

/// The text between the end of group `after` and the start of the secret.
fn glue<'h>(caps: &Captures<'h>, after: &str) -> &'h str {
    let (Some(whole), Some(a)) = (caps.get(0), caps.name(after)) else {
        return "";
    };
    let secret_start =
        ["s1", "s2", "s3", "s4"].iter().find_map(|g| caps.name(g)).map_or(a.end(), |m| m.start());
    let from = a.end() - whole.start();
    let to = secret_start.saturating_sub(whole.start());
    whole.as_str().get(from..to).unwrap_or("")
}

/// A quoted literal assigned to a password name.
pub(crate) fn password_literal(name: &str, v: &str) -> bool {
    let len = v.chars().count();
    (3..=200).contains(&len)
        && !v.chars().any(char::is_whitespace)
        && !is_reference(v)
        && !is_path(v)
        && !is_placeholder_word(v)
        && !is_uri(v)
        && !mentions_password(v)
        && !v.eq_ignore_ascii_case(name)
        && !v.starts_with([':', '@', '?'])
}

/// A literal assigned to a secret name: a token, not a word, regex or format string.
pub(crate) fn secret_literal(v: &str) -> bool {
    looks_like_secret(v)
        && !is_reference(v)
        && !is_path(v)
        && !is_uri(v)
        && !v.contains(['(', ')', '[', ']', '{', '}', '<', '>', '\\', '|', '%'])
}

/// An unquoted value that cannot be an expression in common languages.
pub(crate) fn unquoted_literal(v: &str) -> bool {
    if v.is_empty()
        || is_reference(v)
        || is_path(v)
        || is_uri(v)
        || is_keyword(v)
        || v.contains(['(', ')'])
        || v.contains("->")
        || v.contains("::")
        || v.starts_with(['*', '&', '!', '[', '{', '<', ':', '@', '?', '.', '=', '|', '>', '\\', '-'])
        || v.ends_with([',', ';', '{', '[', '\\', ':', '+'])
    {
        return false;
    }
    // `os.environ`, `self.password`, `tokens[i]`: field access and indexing.
    let dotted = v.contains('.') && v.split('.').all(is_identifier);
    let indexed =
        v.split_once('[').is_some_and(|(head, _)| is_identifier(head) || head.split('.').all(is_identifier));
    if dotted || indexed {
        return false;
    }
    // Short numbers are counters and defaults (`password = 0`), not PINs.
    !(v.bytes().all(|b| b.is_ascii_digit() || b == b'-') && v.len() < 4)
}

/// A bare identifier that is still probably a password: `hunter2`, not `pw2` or
/// `password2` (a renamed variable).
fn password_like_word(name: &str, v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    v.len() >= 6
        && has_digit(v)
        && has_letter(v)
        && !lower.contains("pass")
        && !lower.contains("pwd")
        && !lower.eq_ignore_ascii_case(name)
}

fn is_identifier(v: &str) -> bool {
    let mut bytes = v.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_symbol(b: u8) -> bool {
    b.is_ascii_punctuation() && !matches!(b, b'_' | b'-' | b'.')
}

/// `PASSWORD`, `API_KEY`: the placeholder a usage line shows for a flag's value.
fn is_metavar(v: &str) -> bool {
    has_letter(v) && v.bytes().all(|b| b.is_ascii_uppercase() || b == b'_' || b == b'-')
}

fn is_keyword(v: &str) -> bool {
    #[rustfmt::skip]
    const KEYWORDS: &[&str] = &[
        "none", "null", "nil", "true", "false", "undefined", "self", "this", "yes", "no", "on",
        "off", "~", "required", "optional", "default", "empty", "unset", "pass", "await", "new",
        "return",
    ];
    KEYWORDS.iter().any(|k| v.eq_ignore_ascii_case(k))
}

/// Type annotations: `password: str`, `token: String`, `secret: SecretStr`.
fn is_type_name(v: &str) -> bool {
    #[rustfmt::skip]
    const TYPES: &[&str] = &[
        "str", "string", "bytes", "int", "bool", "boolean", "float", "number", "any", "object",
        "text", "char", "secret", "secretstr", "password", "token",
    ];
    let camel = v.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
        && v.bytes().any(|b| b.is_ascii_lowercase())
        && is_identifier(v);
    camel || TYPES.iter().any(|t| v.eq_ignore_ascii_case(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquoted_values_that_are_expressions_are_not_literals() {
        for v in [
            "os.environ",
            "get_password()",
            "tokens[i]",
            "None",
            "&str",
            "*ptr",
            "pw,",
            "x;",
            "$DB_PASS",
            "0",
        ] {
            assert!(!unquoted_literal(v), "{v}");
        }
        for v in ["hunter2", "s3cr3t!", "Tr0ub4dor&3", "123456"] {
            assert!(unquoted_literal(v), "{v}");
        }
    }

    #[test]
    fn json_fields_use_the_key_as_context() {
        assert_eq!(json_field_label("password", "hunter2"), Some(PW_LABEL));
        assert_eq!(json_field_label("apiKey", "a8f3b2c9d1e0"), Some(SECRET_LABEL));
        assert_eq!(json_field_label("password", "password"), None);
        assert_eq!(json_field_label("token", "NAME"), None);
        assert_eq!(json_field_label("title", "hunter2"), None);
    }
}
