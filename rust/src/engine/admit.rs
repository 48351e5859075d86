//! The last word on what a query may return: every packed hit's own row is
//! checked against the query's filters before it is returned or rendered.
//!
//! The index already applies these filters; this check does not trust it. A
//! derived file that misleads the index (one left from another database, a
//! bug) can then cost recall, never a hit from another scope, session or kind.
//! The rows are read for packing anyway, so the check costs a few comparisons.

use crate::entry::{Entry, Micros};

use super::select::Selection;
use super::Query;

/// The filters of a query, ready to compare with rows.
pub(super) struct Admit<'q> {
    query: &'q Query,
    /// Its scope prefix and metadata filter.
    selection: &'q Selection,
    now: Micros,
}

impl<'q> Admit<'q> {
    pub(super) fn new(query: &'q Query, selection: &'q Selection, now: Micros) -> Self {
        Self { query, selection, now }
    }

    /// Whether `entry` matches every filter of the query (and is alive at the
    /// query's clock).
    pub(super) fn admits(&self, entry: &Entry) -> bool {
        let q = self.query;
        let scope_ok = q
            .scopes
            .as_ref()
            .is_none_or(|scopes| scopes.iter().any(|s| s.as_deref() == entry.scope.as_deref()));
        let kind_ok = q.kinds.as_ref().is_none_or(|kinds| kinds.contains(&entry.kind));
        let session_ok =
            q.session_id.as_ref().is_none_or(|s| entry.session_id.as_deref() == Some(s.as_str()));
        let time_ok =
            q.since.is_none_or(|t| entry.timestamp >= t) && q.until.is_none_or(|t| entry.timestamp < t);
        let prefix_ok = self
            .selection
            .prefix
            .as_deref()
            .is_none_or(|p| entry.scope.as_deref().is_some_and(|s| crate::scope_path::under(s, p)));
        let metadata_ok =
            self.selection.filter.as_ref().is_none_or(|f| f.matches_json(entry.metadata.as_deref()));
        let valid_ok = q.valid_at(self.now).is_none_or(|at| entry.valid_at(at));
        scope_ok
            && prefix_ok
            && kind_ok
            && session_ok
            && time_ok
            && metadata_ok
            && valid_ok
            && entry.alive_at(self.now)
    }

    /// `admits`, logging a refusal: the index offered a row its filters exclude.
    pub(super) fn check(&self, entry: &Entry) -> bool {
        let ok = self.admits(entry);
        if !ok {
            log::warn!(
                "the search index offered entry {} outside the query's filters; it was left out \
                 (the index may be stale or damaged)",
                entry.id
            );
        }
        ok
    }
}
