//! Hierarchical scopes: `/` separates a scope's levels (`org:1/user:42/chat`),
//! and a scope prefix selects a scope and everything beneath it.
//!
//! The rule: prefix `P` (one trailing `/` ignored) matches scope `S` when
//! `S == P` or `S` starts with `P/`. Levels are whole: `team:a` matches
//! `team:a` and `team:a/x`, never `team:ab`; no character but `/` is special.

use libsql::Value;

use crate::entry::validate_label;
use crate::error::{Error, Result};

/// The prefix as matched: one trailing `/` dropped, and checked as a scope.
pub fn normalize_prefix(prefix: &str) -> Result<String> {
    let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
    if trimmed.is_empty() || trimmed.ends_with('/') {
        return Err(Error::invalid(format!(
            "scope_prefix {prefix:?}: one or more levels, such as \"org:1\" or \"org:1/user:42/\""
        )));
    }
    validate_label("scope_prefix", trimmed)?;
    Ok(trimmed.to_owned())
}

/// Whether `scope` is `prefix` (normalised) or beneath it.
pub fn under(scope: &str, prefix: &str) -> bool {
    scope.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Every prefix that matches `scope`: each level's path, the scope last
/// (`a/b/c`: `a`, `a/b`, `a/b/c`). The index keeps them as terms.
pub fn levels(scope: &str) -> impl Iterator<Item = &str> {
    scope.match_indices('/').map(|(i, _)| &scope[..i]).filter(|p| !p.is_empty()).chain(std::iter::once(scope))
}

/// SQL over the `scope` column for "under `prefix`", its parameters appended:
/// equal, or within the byte range of `prefix/` (`0` follows `/`), which the
/// scope index serves.
pub fn sql(prefix: &str, params: &mut Vec<Value>) -> String {
    params.push(Value::Text(prefix.to_owned()));
    let p = params.len();
    params.push(Value::Text(format!("{prefix}/")));
    params.push(Value::Text(format!("{prefix}0")));
    format!("(scope = ?{p} OR (scope >= ?{} AND scope < ?{}))", p + 1, p + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_whole() {
        assert!(under("team:a", "team:a"));
        assert!(under("team:a/x/y", "team:a"));
        assert!(under("team:a/x/y", "team:a/x"));
        assert!(!under("team:ab", "team:a"));
        assert!(!under("team:a", "team:a/x"));
        assert!(!under("team:a_x", "team:a"));
        assert_eq!(levels("a/b/c").collect::<Vec<_>>(), ["a", "a/b", "a/b/c"]);
        assert_eq!(levels("solo").collect::<Vec<_>>(), ["solo"]);
        assert_eq!(normalize_prefix("org:1/").unwrap(), "org:1");
        assert!(normalize_prefix("/").is_err());
        assert!(normalize_prefix("").is_err());
        assert!(normalize_prefix("a//").is_err());
    }
}
