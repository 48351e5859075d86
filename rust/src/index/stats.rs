//! BM25 statistics over the committed index and the tail together, so that a
//! document scores the same before and after its commit.

use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

use super::schema::Fields;
use super::tail::{Tail, CONTEXT, DATE, TEXT};

pub struct CombinedStats<'a> {
    pub searcher: &'a Searcher,
    pub tail: &'a Tail,
    pub fields: &'a Fields,
}

impl CombinedStats<'_> {
    pub fn num_docs(&self) -> u64 {
        let committed: u64 = self.searcher.segment_readers().iter().map(|s| u64::from(s.max_doc())).sum();
        committed + self.tail.num_docs()
    }

    /// Entries a query can find: the committed ones not deleted or replaced,
    /// and the tail's. (`num_docs` counts deleted documents until a merge
    /// drops them, as BM25's statistics do.)
    pub fn live_docs(&self) -> u64 {
        let committed = self.searcher.num_docs().saturating_sub(self.tail.tombstones.len() as u64);
        committed + self.tail.docs.len() as u64
    }

    pub fn avg_len(&self, field: Field) -> f32 {
        let docs = self.num_docs().max(1);
        let tokens = self.total_num_tokens(field).unwrap_or(0);
        (tokens as f32 / docs as f32).max(1.0)
    }

    /// The tail's slot for a scored field.
    pub fn slot(&self, field: Field) -> Option<usize> {
        let f = self.fields;
        [(f.text, TEXT), (f.context, CONTEXT), (f.date, DATE)]
            .iter()
            .find(|(x, _)| *x == field)
            .map(|(_, slot)| *slot)
    }
}

impl Bm25StatisticsProvider for CombinedStats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let committed = Bm25StatisticsProvider::total_num_tokens(self.searcher, field)?;
        Ok(committed + self.slot(field).map_or(0, |slot| self.tail.total_len(slot)))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.num_docs())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let committed = self.searcher.doc_freq(term)?;
        let tail = match (self.slot(term.field()), term.value().as_str()) {
            (Some(slot), Some(text)) => self.tail.doc_freq(slot, text),
            _ => 0,
        };
        Ok(committed + tail)
    }
}
