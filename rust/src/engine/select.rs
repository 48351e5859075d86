//! What a query selects beside its words: a scope prefix and a metadata
//! filter, made ready for the index, the store and the final check; and a
//! query without words, which lists what its filters select, newest first.

use std::collections::HashSet;
use std::sync::Arc;

use super::admit::Admit;
use super::{Memory, Query};
use crate::entry::{Hit, Micros};
use crate::error::Result;
use crate::filter::Filter;
use crate::store::ListFilter;

/// A query's scope prefix and metadata filter, parsed.
#[derive(Debug, Clone, Default)]
pub(super) struct Selection {
    /// Normalised (`scope_path::normalize_prefix`).
    pub prefix: Option<String>,
    /// `None` when the query has none (or an empty one).
    pub filter: Option<Arc<Filter>>,
    /// The filter's index terms (`Filter::index_terms`).
    pub terms: Vec<String>,
    /// The entries the filter selects in the store, when its terms do not
    /// decide it: the index returns no other.
    pub allowed: Option<Arc<HashSet<i64>>>,
}

/// Rows read per page by a query without words.
const BROWSE_PAGE: usize = 256;

impl Memory {
    pub(super) fn selection(&self, query: &Query) -> Result<Selection> {
        let prefix = query.scope_prefix.as_deref().map(crate::scope_path::normalize_prefix).transpose()?;
        let filter = query.metadata.as_deref().map(Filter::parse).transpose()?.filter(|f| !f.is_empty());
        let terms = filter.as_ref().map(Filter::index_terms).unwrap_or_default();
        let allowed = match &filter {
            Some(f) if !f.decided_by_terms() => {
                let within = ListFilter {
                    scopes: query.scopes.clone(),
                    scope_prefix: prefix.clone(),
                    session_id: query.session_id.clone(),
                    metadata: Some(f.clone()),
                    ..ListFilter::default()
                };
                Some(Arc::new(self.store.ids_where(&within)?))
            }
            _ => None,
        };
        Ok(Selection { prefix, filter: filter.map(Arc::new), terms, allowed })
    }

    /// A query without words: the entries its filters select, newest first
    /// (no relevance orders them, so they carry none: `score` is NaN), the
    /// first `offset` skipped, then taken in that order while they fit the
    /// budget and the limit.
    pub(super) fn browse(&self, query: &Query, selection: &Selection, now: Micros) -> Result<Vec<Hit>> {
        let admit = Admit::new(query, selection, now);
        let filter = ListFilter {
            scopes: query.scopes.clone(),
            scope_prefix: selection.prefix.clone(),
            metadata: selection.filter.as_deref().cloned(),
            kind: match query.kinds.as_deref() {
                Some([kind]) => Some(kind.clone()),
                _ => None,
            },
            session_id: query.session_id.clone(),
            since: query.since,
            until: query.until,
            alive_at: Some(now),
            valid_at: query.valid_at(now),
            all_versions: query.all_versions,
        };
        let limit = query.limit.unwrap_or(usize::MAX);
        let drop_flagged = query.injection == super::InjectionPolicy::Drop;
        let (mut left, mut skipped, mut seen) = (query.budget, 0, 0);
        let mut hits = Vec::new();
        let mut cursor = None;
        // However small the budget, no more rows are read than a ranked query
        // would consider.
        let most = query.offset.saturating_add(super::read::MAX_DEPTH);
        'pages: loop {
            let page = self.store.list(&filter, cursor, BROWSE_PAGE)?;
            cursor = page.last().map(|e| (e.timestamp, e.id));
            let full = page.len() == BROWSE_PAGE;
            for entry in page {
                seen += 1;
                if seen > most {
                    break 'pages;
                }
                if !admit.admits(&entry) {
                    continue;
                }
                let hit = Hit::new(entry, f32::NAN);
                if drop_flagged && !hit.risks.is_empty() {
                    continue;
                }
                if skipped < query.offset {
                    skipped += 1;
                    continue;
                }
                let tokens = u64::from(hit.entry.tokens);
                if tokens > left {
                    continue;
                }
                left -= tokens;
                hits.push(hit);
                if hits.len() >= limit || left == 0 {
                    break 'pages;
                }
            }
            if !full {
                break;
            }
        }
        Ok(hits)
    }
}
