//! English stemming that keeps the stems of recent words: the same Snowball
//! algorithm as tantivy's `Stemmer`, so the same terms, but a word seen before
//! on this thread costs a lookup instead of a run of the algorithm. Text is
//! Zipfian, so most words have been seen; stemming was a tenth of indexing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Words kept per thread; the map is cleared when it fills.
const KEPT: usize = 1 << 14;
/// Longer words are stemmed every time.
const MAX_KEPT_LEN: usize = 24;

static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

thread_local! {
    static STEMS: RefCell<HashMap<String, String>> = RefCell::new(HashMap::new());
}

/// The filter, used like `tantivy::tokenizer::Stemmer::new(Language::English)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnglishStemmer;

impl TokenFilter for EnglishStemmer {
    type Tokenizer<T: Tokenizer> = StemmedTokenizer<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> StemmedTokenizer<T> {
        StemmedTokenizer { inner: tokenizer }
    }
}

#[derive(Clone)]
pub struct StemmedTokenizer<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for StemmedTokenizer<T> {
    type TokenStream<'a> = StemmedTokens<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        StemmedTokens { inner: self.inner.token_stream(text) }
    }
}

pub struct StemmedTokens<T> {
    inner: T,
}

impl<T: TokenStream> TokenStream for StemmedTokens<T> {
    fn advance(&mut self) -> bool {
        if !self.inner.advance() {
            return false;
        }
        let text = &mut self.inner.token_mut().text;
        if text.len() > MAX_KEPT_LEN {
            *text = ENGLISH.stem(text).into_owned();
            return true;
        }
        STEMS.with(|stems| {
            let mut stems = stems.borrow_mut();
            if let Some(stem) = stems.get(text.as_str()) {
                if stem != text {
                    text.clear();
                    text.push_str(stem);
                }
                return;
            }
            let stem = ENGLISH.stem(text).into_owned();
            if stems.len() >= KEPT {
                stems.clear();
            }
            stems.insert(std::mem::replace(text, stem.clone()), stem);
        });
        true
    }

    fn token(&self) -> &Token {
        self.inner.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.inner.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::{Language, LowerCaser, SimpleTokenizer, TextAnalyzer};

    use super::*;

    fn terms(mut analyzer: TextAnalyzer, text: &str) -> Vec<String> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn stems_as_tantivy_does_the_first_time_and_every_time_after() {
        let text = "Running runners ran; the generously generalized generalizations \
                    running again, caresses ponies ties, internationalizationalistically";
        let ours = || {
            TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(LowerCaser)
                .filter(EnglishStemmer)
                .build()
        };
        let theirs = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(LowerCaser)
            .filter(tantivy::tokenizer::Stemmer::new(Language::English))
            .build();
        let want = terms(theirs, text);
        assert_eq!(terms(ours(), text), want);
        assert_eq!(terms(ours(), text), want, "from the kept stems");
    }
}
