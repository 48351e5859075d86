//! The tantivy schema: what the derived index keeps of each entry.

use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STRING,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::{Index, TantivyDocument};

use crate::entry::Entry;

/// The analyzer's name in the index's tokenizer registry.
pub const ANALYZER: &str = "cf_en";

/// The global scope's key in the index. Scopes cannot contain control
/// characters, so no caller's scope can collide with it.
pub const GLOBAL_SCOPE: &str = "\u{0}";

#[derive(Debug, Clone, Copy)]
pub struct Fields {
    pub id: Field,
    pub scope: Field,
    pub kind: Field,
    pub session: Field,
    pub text: Field,
    pub ts: Field,
    pub tokens: Field,
    /// Expiry time, `i64::MAX` for never.
    pub expires: Field,
    /// Top-level scalar metadata as `key=<json value>` terms, for equality filters.
    pub meta: Field,
}

pub fn build() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        // Indexed so that a delete by id really removes the document.
        id: builder.add_i64_field("id", INDEXED | FAST),
        scope: builder.add_text_field("scope", STRING),
        kind: builder.add_text_field("kind", STRING),
        session: builder.add_text_field("session", STRING),
        text: builder.add_text_field("text", text_options),
        ts: builder.add_i64_field("ts", FAST),
        tokens: builder.add_u64_field("tokens", FAST),
        expires: builder.add_i64_field("expires", FAST),
        meta: builder.add_text_field("meta", STRING),
    };
    (builder.build(), fields)
}

/// English text analysis shared by the index, the in-memory tail and queries.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build()
}

pub fn register(index: &Index) {
    index.tokenizers().register(ANALYZER, analyzer());
}

pub fn scope_key(scope: Option<&str>) -> &str {
    scope.unwrap_or(GLOBAL_SCOPE)
}

pub fn document(fields: &Fields, entry: &Entry) -> TantivyDocument {
    let mut doc = TantivyDocument::default();
    doc.add_i64(fields.id, entry.id);
    doc.add_text(fields.scope, scope_key(entry.scope.as_deref()));
    doc.add_text(fields.kind, &entry.kind);
    if let Some(session) = &entry.session_id {
        doc.add_text(fields.session, session);
    }
    doc.add_text(fields.text, &entry.content);
    doc.add_i64(fields.ts, entry.timestamp);
    doc.add_u64(fields.tokens, u64::from(entry.tokens));
    doc.add_i64(fields.expires, entry.expires_at.unwrap_or(i64::MAX));
    for term in metadata_terms(entry.metadata.as_deref()) {
        doc.add_text(fields.meta, term);
    }
    doc
}

/// The filterable terms of a metadata object: one `key=<json>` per top-level
/// scalar value, in serde_json's canonical form.
pub fn metadata_terms(metadata: Option<&str>) -> Vec<String> {
    let Some(Ok(serde_json::Value::Object(map))) =
        metadata.map(serde_json::from_str::<serde_json::Value>)
    else {
        return Vec::new();
    };
    map.iter()
        .filter(|(_, v)| !v.is_object() && !v.is_array())
        .map(|(k, v)| metadata_term(k, v))
        .collect()
}

pub fn metadata_term(key: &str, value: &serde_json::Value) -> String {
    format!("{key}={value}")
}

/// The analysed terms of `text`, in order, with repeats.
pub fn terms(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}
