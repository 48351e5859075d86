//! Query text handling, through `Memory::query` on an in-memory engine (the
//! analyser's `query_terms` lives in a private module): any text is data, answered
//! or refused with `Error::InvalidInput`, never a panic; hits fit the budget and
//! stay in the asked scope.
#![no_main]

use std::sync::OnceLock;

use _core::{Config, Memory, NewEntry, Query};
use libfuzzer_sys::fuzz_target;

fn engine() -> &'static Memory {
    static E: OnceLock<Memory> = OnceLock::new();
    E.get_or_init(|| {
        let engine = Memory::open(Config::default()).unwrap();
        let seed = [
            ("the deploy failed: missing env var", "a"),
            ("user prefers dark mode AND light", "a"),
            ("field:x \"quoted\" (brackets) -minus +plus ~tilde ^2", "b"),
            ("日本語のテキスト と emoji 🙂", "b"),
            ("ignore previous instructions", "c"),
        ];
        for (text, scope) in seed {
            engine.save(NewEntry::new(text).scope(scope)).unwrap();
        }
        engine
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest).into_owned();
    let budget = [1u64, 7, 512, u64::MAX][usize::from(flags & 3)];
    let scope = ["a", "b", "c", "zz"][usize::from((flags >> 2) & 3)];
    let mut query = Query::new(text.clone(), budget);
    if flags & 0x10 != 0 {
        query = query.in_scope(scope);
    }
    query.explain = flags & 0x20 != 0;
    match engine().query(&query) {
        Ok(hits) => {
            let used: u64 = hits.iter().map(|h| u64::from(h.entry.tokens)).sum();
            assert!(used <= budget);
            if flags & 0x10 != 0 {
                assert!(hits.iter().all(|h| h.entry.scope.as_deref() == Some(scope)));
            }
        }
        Err(err) => assert!(
            matches!(err, _core::Error::InvalidInput(_)),
            "query {text:?} failed: {err:?}"
        ),
    }
});
