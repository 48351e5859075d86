//! `QueryRecord`: what `query` and `context` ask, as `_convert.query_record` builds it.

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use super::choice::Parsed;
use super::scope::Scopes;
use super::text::{strings, Text};
use crate::engine::{InjectionPolicy, Query};
use crate::entry::Micros;
use crate::render::Order;

/// A dict with these keys (`_core._Query` in the stub); `explain` (for
/// `query`) and `order` (for `context`) may be left out.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct QueryRecord<'py> {
    text: Text,
    scopes: Scopes,
    budget: u64,
    limit: Option<usize>,
    now: Option<Micros>,
    depth: Option<usize>,
    kinds: Option<Vec<Text>>,
    session_id: Option<Text>,
    since: Option<Micros>,
    until: Option<Micros>,
    /// JSON text.
    metadata: Option<Text>,
    #[pyo3(default)]
    scope_prefix: Option<Text>,
    #[pyo3(default)]
    offset: usize,
    on_injection: Parsed<InjectionPolicy>,
    #[pyo3(default)]
    explain: bool,
    #[pyo3(default)]
    order: Parsed<Order>,
    embedding: Option<PyReadonlyArray1<'py, f32>>,
    as_of: Option<Micros>,
    include_superseded: bool,
}

impl QueryRecord<'_> {
    /// The engine's query, and the layout a `context` asks for.
    pub fn query(self) -> (Query, Order) {
        let query = Query {
            text: self.text.0,
            scopes: self.scopes.into(),
            budget: self.budget,
            limit: self.limit,
            now: self.now,
            depth: self.depth,
            kinds: self.kinds.map(strings),
            session_id: self.session_id.map(String::from),
            since: self.since,
            until: self.until,
            metadata: self.metadata.map(String::from),
            scope_prefix: self.scope_prefix.map(String::from),
            offset: self.offset,
            injection: self.on_injection.0,
            explain: self.explain,
            embedding: self.embedding.map(|v| v.as_array().to_vec()),
            as_of: self.as_of,
            all_versions: self.include_superseded,
        };
        (query, self.order.0)
    }
}
