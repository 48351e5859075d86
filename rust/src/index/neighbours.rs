//! Each entry's context (the previous turns of its session), found while a
//! batch of changes is applied in order.

use std::collections::HashMap;

use super::schema::{self, Extra};
use crate::entry::Entry;
use crate::error::Result;
use crate::store::{Change, ListFilter, Store};

/// Finds each entry's context while a batch of changes is applied in order.
///
/// An entry's context is the text of the previous `schema::CONTEXT_TURNS`
/// entries of its scope and session (by timestamp, then id; within
/// `schema::CONTEXT_WINDOW_US`). Only earlier turns are used, so an entry's
/// context does not change when later turns arrive, and a rebuild reproduces it.
/// They are read from the store, except when the batch itself already holds
/// enough earlier turns of the session: one query per session and batch rather
/// than per entry. That shortcut is exact when a session's timestamps do not go
/// back in save order (the store could otherwise hold an older-id entry with a
/// later timestamp in between).
#[derive(Default)]
pub(super) struct Neighbours {
    /// The batch's latest entries of each session.
    recent: HashMap<SessionKey, Vec<Turn>>,
}

/// (scope, session).
type SessionKey = (Option<String>, String);
/// (timestamp, id, content).
type Turn = (i64, i64, String);

/// Batch entries kept per session.
const NEIGHBOURS_KEPT: usize = 8;

impl Neighbours {
    /// The extras of `changes` (a deletion has none), in order.
    pub(super) fn extras(&mut self, store: &Store, changes: &[Change]) -> Result<Vec<Extra>> {
        changes
            .iter()
            .map(|c| c.entry.as_ref().map_or_else(|| Ok(Extra::default()), |e| self.extra(store, e)))
            .collect()
    }

    pub(super) fn extra(&mut self, store: &Store, entry: &Entry) -> Result<Extra> {
        let Some(session) = &entry.session_id else { return Ok(Extra::default()) };
        if schema::CONTEXT_TURNS == 0 {
            return Ok(Extra::default());
        }
        let key = (entry.scope.clone(), session.clone());
        let here = (entry.timestamp, entry.id);
        let since = entry.timestamp.saturating_sub(schema::CONTEXT_WINDOW_US);
        let recent = self.recent.entry(key).or_default();
        let mut prior: Vec<&(i64, i64, String)> =
            recent.iter().filter(|(ts, id, _)| (*ts, *id) < here && *ts >= since).collect();
        prior.sort_by_key(|(ts, id, _)| (*ts, *id));
        let (context, prev) = if prior.len() >= schema::CONTEXT_TURNS {
            let from = prior.len() - schema::CONTEXT_TURNS;
            let text = prior[from..].iter().map(|(_, _, c)| c.as_str()).collect::<Vec<_>>().join("\n");
            (text, prior.last().map_or(0, |(_, id, _)| *id))
        } else {
            let filter = ListFilter {
                scopes: Some(vec![entry.scope.clone()]),
                session_id: Some(session.clone()),
                since: Some(since),
                ..ListFilter::default()
            };
            let previous = store.list(&filter, Some(here), schema::CONTEXT_TURNS)?;
            let text = previous.iter().rev().map(|e| e.content.as_str()).collect::<Vec<_>>().join("\n");
            (text, previous.first().map_or(0, |e| e.id))
        };
        recent.retain(|(_, id, _)| *id != entry.id);
        recent.push((entry.timestamp, entry.id, entry.content.clone()));
        if recent.len() > NEIGHBOURS_KEPT {
            recent.sort_by_key(|(ts, id, _)| (*ts, *id));
            recent.drain(..recent.len() - NEIGHBOURS_KEPT);
        }
        Ok(Extra { context, prev })
    }
}
