//! Distillation engine through the public API: chunk invariants under proptest and
//! on pathological transcripts, extraction cues, and evidence recall of the
//! extractive distiller on one LoCoMo conversation.
//!
//! Everything sits in `mod distill` so `cargo test distill` selects these tests too.

mod common;

mod distill {
    use _core::config::TokenizerSpec;
    use _core::distill::{
        chunk, extract, scrub_messages, Chunk, ExtractOptions, FactKind, Message, MIN_CHUNK_TOKENS,
    };
    use _core::scrub::Scrubber;
    use _core::tokens::TokenCounter;
    use _core::Error;
    use proptest::prelude::*;
    use std::collections::{BTreeSet, HashMap};
    use std::time::Instant;

    fn counter() -> TokenCounter {
        TokenCounter::load(&TokenizerSpec::O200k).unwrap()
    }

    fn msg(speaker: Option<&str>, text: &str) -> Message {
        Message::new(speaker, text)
    }

    fn strip_ws(text: &str) -> String {
        text.chars().filter(|c| !c.is_whitespace()).collect()
    }

    /// The line a message renders to when its speaker label is short and clean.
    fn line(m: &Message) -> String {
        let body = m.text.trim();
        match m.speaker.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) if body.is_empty() => format!("{s}:"),
            Some(s) => format!("{s}: {body}"),
            None => body.to_string(),
        }
    }

    /// Every invariant of `chunk`, for transcripts whose speakers are short names.
    fn check(messages: &[Message], max: u32, c: &TokenCounter, chunks: &[Chunk]) {
        let mut next = 0usize;
        let mut i = 0usize;
        while i < chunks.len() {
            let ch = &chunks[i];
            match ch.part {
                None => {
                    assert!(!ch.messages.is_empty(), "empty chunk {i}");
                    for (k, &m) in ch.messages.iter().enumerate() {
                        assert_eq!(m, next + k, "order broken in chunk {i}");
                    }
                    let want: Vec<String> = ch.messages.iter().map(|&m| line(&messages[m])).collect();
                    assert_eq!(ch.text, want.join("\n"), "chunk {i} text");
                    next += ch.messages.len();
                    i += 1;
                }
                Some((k, n)) => {
                    assert_eq!(k, 0, "a split message starts at part 0 (chunk {i})");
                    assert!(n >= 1);
                    assert_eq!(ch.messages, vec![next], "split chunk {i} holds one message");
                    let m = &messages[next];
                    // Over 128 bytes per token of budget it cannot fit in o200k
                    // (and counting it is slow); below, count.
                    let whole = line(m);
                    assert!(
                        whole.len() > max as usize * 128 || c.count(&whole) > max,
                        "message {next} was split though it fits whole"
                    );
                    let prefix = m
                        .speaker
                        .as_deref()
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(|s| format!("{s}:"));
                    let mut content = String::new();
                    for j in 0..n {
                        let part = chunks.get(i + j).expect("missing part");
                        assert_eq!(part.part, Some((j, n)), "parts in order");
                        assert_eq!(part.messages, vec![next]);
                        let body = match &prefix {
                            Some(p) => part.text.strip_prefix(p.as_str()).expect("label kept"),
                            None => part.text.as_str(),
                        };
                        assert!(!body.trim().is_empty(), "empty part");
                        content.push_str(body);
                    }
                    assert_eq!(strip_ws(&content), strip_ws(&m.text), "message {next} content");
                    next += 1;
                    i += n;
                }
            }
        }
        assert_eq!(next, messages.len(), "every message is in a chunk");
        for (i, ch) in chunks.iter().enumerate() {
            assert!(ch.tokens <= max, "chunk {i}: {} > {max}", ch.tokens);
            assert_eq!(ch.tokens, c.count(&ch.text), "chunk {i} count");
        }
    }

    // ---------------------------------------------------------------------------
    // Chunking: properties
    // ---------------------------------------------------------------------------

    const PIECES: &[&str] = &[
        "the ",
        "deploy ",
        "failed ",
        "because ",
        "déjà ",
        "vu ",
        "東京",
        "は",
        "晴れ。",
        "😀",
        "👩‍👩‍👧 ",
        "1234567 ",
        "e.g. ",
        "Dr. ",
        "ok",
        ". ",
        "! ",
        "? ",
        "... ",
        "\n",
        "\n\n",
        "  ",
        "\t",
        "Ünïcödé ",
        "x",
        "--",
        "==",
        "https://example.com/a/b?c=d ",
        "\"quoted.\" ",
    ];

    fn text_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => prop::collection::vec(prop::sample::select(PIECES), 0..80).prop_map(|v| v.concat()),
            1 => (1usize..600, prop::sample::select(&["a", "é", "😀", "ab ", "字", "."][..]))
                .prop_map(|(n, s)| s.repeat(n)),
            1 => "\\PC{0,300}",
        ]
    }

    fn message_strategy() -> impl Strategy<Value = Message> {
        let speaker = prop::option::of(prop::sample::select(&["Ann", "Bob", "Dr. Who", "李"][..]));
        (speaker, text_strategy()).prop_map(|(s, t)| Message::new(s, t))
    }

    proptest! {
        // No failure file: it would be written into the source tree; a failing case is
        // printed, shrunk, with its seed.
        #![proptest_config(ProptestConfig {
            cases: 300,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn chunk_invariants(
            messages in prop::collection::vec(message_strategy(), 0..14),
            max in MIN_CHUNK_TOKENS..160u32,
        ) {
            let c = counter();
            let chunks = chunk(&messages, max, &c).unwrap();
            check(&messages, max, &c, &chunks);
        }
    }

    // ---------------------------------------------------------------------------
    // Chunking: pathological inputs
    // ---------------------------------------------------------------------------

    #[test]
    fn budget_below_minimum_is_invalid_input() {
        let c = counter();
        for max in [0, 1, MIN_CHUNK_TOKENS - 1] {
            let err = chunk(&[msg(None, "hi")], max, &c).unwrap_err();
            assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
        }
        assert!(chunk(&[msg(None, "hi")], MIN_CHUNK_TOKENS, &c).is_ok());
    }

    #[test]
    fn empty_transcripts_and_messages() {
        let c = counter();
        assert!(chunk(&[], 64, &c).unwrap().is_empty());
        let messages = vec![msg(Some("A"), ""), msg(None, ""), msg(Some("B"), " \n\t "), msg(None, "x")];
        let chunks = chunk(&messages, 64, &c).unwrap();
        check(&messages, 64, &c, &chunks);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].text, "A:\n\nB:\nx");
    }

    #[test]
    fn messages_are_never_cut_when_they_fit() {
        let c = counter();
        let messages: Vec<Message> = (0..200)
            .map(|i| {
                msg(
                    Some(if i % 2 == 0 { "Ann" } else { "Bob" }),
                    &format!("turn {i} says a few words. And more."),
                )
            })
            .collect();
        let chunks = chunk(&messages, 50, &c).unwrap();
        check(&messages, 50, &c, &chunks);
        assert!(chunks.iter().all(|ch| ch.part.is_none()));
        assert!(chunks.len() > 10);
        // Greedy packing: no two neighbours could have been one chunk.
        for pair in chunks.windows(2) {
            let joined = format!("{}\n{}", pair[0].text, pair[1].text);
            assert!(c.count(&joined) > 50);
        }
    }

    #[test]
    fn a_long_message_is_cut_between_sentences() {
        let c = counter();
        let text: String = (0..60).map(|i| format!("Sentence number {i} is here. ")).collect();
        let messages = vec![msg(Some("Ann"), "before"), msg(Some("Bob"), &text), msg(None, "after")];
        let chunks = chunk(&messages, 40, &c).unwrap();
        check(&messages, 40, &c, &chunks);
        let parts: Vec<&Chunk> = chunks.iter().filter(|ch| ch.part.is_some()).collect();
        assert!(parts.len() >= 5);
        for part in parts {
            assert!(part.text.starts_with("Bob: Sentence number "), "{}", part.text);
            assert!(part.text.ends_with("is here."), "cut inside a sentence: {}", part.text);
        }
        assert_eq!(chunks[0].text, "Ann: before");
        assert_eq!(chunks.last().unwrap().text, "after");
    }

    #[test]
    fn a_long_sentence_is_cut_between_words() {
        let c = counter();
        let text = "word ".repeat(500);
        let messages = vec![msg(Some("Ann"), &text)];
        let chunks = chunk(&messages, 32, &c).unwrap();
        check(&messages, 32, &c, &chunks);
        for ch in &chunks {
            let body = ch.text.strip_prefix("Ann: ").unwrap();
            assert!(body.split(' ').all(|w| w == "word"), "cut inside a word: {body}");
        }
    }

    #[test]
    fn one_huge_word_is_cut_between_characters() {
        let c = counter();
        for unit in ["a", "é", "😀", "字", "👩‍👩‍👧", "\u{0301}"] {
            let text = unit.repeat(3000);
            let messages = vec![msg(Some("Ann"), &text), msg(Some("Bob"), "short")];
            let chunks = chunk(&messages, 16, &c).unwrap();
            check(&messages, 16, &c, &chunks);
            assert_eq!(chunks.last().unwrap().text, "Bob: short");
        }
    }

    #[test]
    fn a_huge_speaker_name_is_shortened() {
        let c = counter();
        let speaker = "Very Long Name ".repeat(200);
        let messages = vec![msg(Some(&speaker), "hello there. general kenobi.")];
        let chunks = chunk(&messages, 20, &c).unwrap();
        for ch in &chunks {
            assert!(ch.tokens <= 20);
            assert_eq!(ch.tokens, c.count(&ch.text));
            assert!(ch.text.starts_with("Very Long"), "{}", ch.text);
            assert!(ch.text.contains("…:"), "{}", ch.text);
        }
        let body: String = chunks.iter().map(|ch| ch.text.split_once("…:").unwrap().1).collect();
        assert_eq!(strip_ws(&body), strip_ws("hello there. general kenobi."));
        // Control characters in a name never break the one-line-per-message shape.
        let chunks = chunk(&[msg(Some("A\nB\r\u{0}"), "x")], 64, &c).unwrap();
        assert_eq!(chunks[0].text, "A B: x");
    }

    #[test]
    fn big_transcripts_chunk_and_extract_in_reasonable_time() {
        let c = counter();
        let mut messages: Vec<Message> = (0..20_000)
            .map(|i| msg(Some("Ann"), &format!("message {i}: we talked about the plan. ok.")))
            .collect();
        // One word too long to count quickly (tiktoken is quadratic in it), one long
        // enough to be counted, and a 500 kB sentence.
        messages.push(msg(Some("Bob"), &"z".repeat(200_000)));
        messages.push(msg(Some("Bob"), &"y".repeat(30_000)));
        messages.push(msg(Some("Bob"), &"long sentence without end ".repeat(20_000)));
        let start = Instant::now();
        let chunks = chunk(&messages, 512, &c).unwrap();
        let took = start.elapsed();
        eprintln!("chunked {} messages into {} chunks in {took:?}", messages.len(), chunks.len());
        check(&messages, 512, &c, &chunks);
        assert!(took.as_secs() < 30, "took {took:?}");

        let start = Instant::now();
        let got = extract(&messages, ExtractOptions::default(), &c);
        let took = start.elapsed();
        eprintln!("extracted {} facts from {} messages in {took:?}", got.facts.len(), messages.len());
        // "message N: we talked about the plan." are near-duplicates of each other.
        assert!(!got.facts.is_empty() && got.facts.len() <= 20);
        assert!(took.as_secs() < 30, "took {took:?}");
    }

    // ---------------------------------------------------------------------------
    // Scrubbing before anything else sees the text
    // ---------------------------------------------------------------------------

    #[test]
    fn scrub_messages_redacts_speakers_and_texts() {
        let token = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let messages = vec![msg(Some("Ann"), &format!("use {token} for the deploy")), msg(None, "clean")];
        let clean = scrub_messages(&messages, &Scrubber::default());
        assert_eq!(clean[0].text, "use [REDACTED:github_token] for the deploy");
        assert_eq!(clean[0].speaker.as_deref(), Some("Ann"));
        assert_eq!(clean[1], messages[1]);
        let chunks = chunk(&clean, 64, &counter()).unwrap();
        assert!(!chunks[0].text.contains(token));
    }

    // ---------------------------------------------------------------------------
    // Extraction
    // ---------------------------------------------------------------------------

    fn kinds_of(messages: &[Message]) -> Vec<(FactKind, String)> {
        extract(messages, ExtractOptions::default(), &counter())
            .facts
            .into_iter()
            .map(|f| (f.kind, f.text))
            .collect()
    }

    fn kind_of(text: &str) -> Option<FactKind> {
        let messages = vec![msg(Some("Ann"), text)];
        kinds_of(&messages).into_iter().next().map(|(k, _)| k)
    }

    #[test]
    fn cue_phrases_set_the_kind() {
        let cases = [
            ("We decided to ship the release on Friday after the review.", FactKind::Decision),
            ("Let's go with Postgres for the billing service.", FactKind::Decision),
            ("Everyone agreed that the API stays on version two.", FactKind::Decision),
            ("Actually, the staging server runs on port 8080, not 80.", FactKind::Correction),
            ("No, it's the blue database cluster that holds invoices.", FactKind::Correction),
            ("Correction: the meeting moved to Thursday at 3pm.", FactKind::Correction),
            ("I prefer short answers with code examples in Rust.", FactKind::Preference),
            ("I hate long meetings that run over lunch time.", FactKind::Preference),
            ("Always run the migrations before deploying the backend.", FactKind::Preference),
            ("The main branch is now protected by required reviews.", FactKind::State),
            ("Sarah moved to Berlin in March to lead the data team.", FactKind::State),
            ("The project deadline for the audit report is 12 June.", FactKind::State),
            ("The backup job restores 40 GB from Glacier in 6 hours.", FactKind::Fact),
        ];
        for (text, want) in cases {
            assert_eq!(kind_of(text), Some(want), "{text}");
        }
    }

    #[test]
    fn chatter_does_not_become_facts() {
        let messages = vec![
            msg(Some("Ann"), "Hey! How are you?"),
            msg(Some("Bob"), "Good, thanks! You?"),
            msg(Some("Ann"), "Wow, that's awesome!"),
            msg(Some("Bob"), "Haha yes. Ok."),
            msg(Some("Ann"), "Bye, take care!"),
        ];
        let got = extract(&messages, ExtractOptions::default(), &counter());
        assert!(got.facts.is_empty(), "{:?}", got.facts);
    }

    #[test]
    fn salient_sentences_beat_chatter_and_duplicates_collapse() {
        let messages = vec![
            msg(Some("Ann"), "Hi Bob! How was your weekend?"),
            msg(Some("Bob"), "Great, thanks. I adopted a puppy named Biscuit last Saturday."),
            msg(Some("Ann"), "Oh nice! What breed is Biscuit?"),
            msg(Some("Bob"), "Biscuit is a golden retriever, eight weeks old."),
            msg(Some("Ann"), "Cute. By the way, we decided to move the launch to 14 May."),
            msg(Some("Bob"), "Yes, we decided to move the launch to 14 May."),
            msg(Some("Ann"), "Sounds good. Talk soon!"),
        ];
        let opts = ExtractOptions { max_facts: 3, max_fact_chars: 300, summary_sentences: 2 };
        let got = extract(&messages, opts, &counter());
        let texts: Vec<&str> = got.facts.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(got.facts.len(), 3, "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("adopted a puppy named Biscuit")), "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("golden retriever")), "{texts:?}");
        let launches = texts.iter().filter(|t| t.contains("launch to 14 May")).count();
        assert_eq!(launches, 1, "near-duplicates collapse: {texts:?}");
        let decision = got.facts.iter().find(|f| f.text.contains("launch")).unwrap();
        assert_eq!(decision.kind, FactKind::Decision);
        // Facts come in transcript order, attributed, and know their message.
        let order: Vec<usize> = got.facts.iter().map(|f| f.message).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
        for f in &got.facts {
            let speaker = messages[f.message].speaker.as_deref().unwrap();
            assert!(f.text.starts_with(&format!("{speaker}: ")), "{}", f.text);
        }
        // The summary: at most two sentences, one per line, in transcript order.
        let lines: Vec<&str> = got.summary.lines().collect();
        assert!(!lines.is_empty() && lines.len() <= 2, "{:?}", got.summary);
        let positions: Vec<usize> = lines
            .iter()
            .map(|l| {
                let body = l.split_once(": ").unwrap().1;
                messages.iter().position(|m| m.text.contains(body)).unwrap()
            })
            .collect();
        assert!(positions.windows(2).all(|w| w[0] <= w[1]), "{positions:?}");
    }

    #[test]
    fn limits_are_respected_and_output_is_deterministic() {
        let messages: Vec<Message> = (0..50)
            .map(|i| {
                msg(
                    Some("Ann"),
                    &format!("Project Falcon milestone {i} is now scheduled for week {} in the Berlin office, with a long tail of extra words to make it overflow.", i + 1),
                )
            })
            .collect();
        let opts = ExtractOptions { max_facts: 7, max_fact_chars: 60, summary_sentences: 4 };
        let a = extract(&messages, opts, &counter());
        let b = extract(&messages, opts, &counter());
        assert_eq!(a, b);
        assert!(a.facts.len() <= 7);
        assert!(a.facts.iter().all(|f| f.text.chars().count() <= 60), "{:?}", a.facts);
        assert!(a.facts.iter().any(|f| f.text.ends_with('…')));
        assert!(a.summary.lines().count() <= 4);
        let none = extract(
            &messages,
            ExtractOptions { max_facts: 0, max_fact_chars: 300, summary_sentences: 0 },
            &counter(),
        );
        assert!(none.facts.is_empty() && none.summary.is_empty());
        let empty = extract(&[], ExtractOptions::default(), &counter());
        assert!(empty.facts.is_empty() && empty.summary.is_empty());
    }

    // ---------------------------------------------------------------------------
    // LoCoMo: does the extractive distiller keep what questions later ask about?
    // ---------------------------------------------------------------------------

    /// Lowercase words joined by single spaces: robust substring matching.
    fn norm(text: &str) -> String {
        text.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn locomo_evidence_share() {
        let Some(path) = crate::common::locomo_dir().map(|d| d.join("26.json")) else {
            eprintln!("skipped: the LoCoMo dev set is absent");
            return;
        };
        let raw = std::fs::read_to_string(&path).unwrap();
        let conv: serde_json::Value = serde_json::from_str(&raw).unwrap();
        let obj = conv.as_object().unwrap();
        // Sessions in order: (dia_ids, messages).
        let mut sessions: Vec<(u32, Vec<String>, Vec<Message>)> = Vec::new();
        for (key, value) in obj {
            let Some(n) = key.strip_prefix("session_").and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Some(turns) = value.as_array() else {
                continue;
            };
            let mut ids = Vec::new();
            let mut messages = Vec::new();
            for t in turns {
                let mut text = t["text"].as_str().unwrap_or_default().to_string();
                if let Some(caption) = t.get("blip_caption").and_then(|c| c.as_str()) {
                    text.push_str(&format!(" [shares {caption}]"));
                }
                ids.push(t["dia_id"].as_str().unwrap_or_default().to_string());
                messages.push(Message::new(t["speaker"].as_str(), text));
            }
            sessions.push((n, ids, messages));
        }
        sessions.sort_by_key(|s| s.0);
        let evidence: BTreeSet<String> = obj["qa"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|q| q["evidence"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| e.as_str().map(str::to_string))
            .flat_map(|e| e.split([';', ',', ' ']).map(str::trim).map(str::to_string).collect::<Vec<_>>())
            .filter(|e| !e.is_empty())
            .collect();
        let c = counter();
        let turn_count: usize = sessions.iter().map(|s| s.2.len()).sum();
        eprintln!(
            "LoCoMo 26: {} sessions, {turn_count} turns, {} distinct evidence turns",
            sessions.len(),
            evidence.len()
        );
        let mut report = HashMap::new();
        for max_facts in [3usize, 5, 8, 12, 20] {
            let opts = ExtractOptions { max_facts, max_fact_chars: 300, summary_sentences: 3 };
            let mut mentioned: BTreeSet<String> = BTreeSet::new();
            let mut facts_total = 0;
            for (_, ids, messages) in &sessions {
                let got = extract(messages, opts, &c);
                facts_total += got.facts.len();
                for f in &got.facts {
                    // The fact's sentence, without speaker and cut mark.
                    let body = f.text.split_once(": ").map_or(f.text.as_str(), |(_, b)| b);
                    let body = norm(body.trim_end_matches('…'));
                    if body.is_empty() {
                        continue;
                    }
                    for (id, m) in ids.iter().zip(messages) {
                        if norm(&m.text).contains(&body) {
                            mentioned.insert(id.clone());
                        }
                    }
                }
            }
            let hit = evidence.iter().filter(|e| mentioned.contains(*e)).count();
            let share = hit as f64 / evidence.len() as f64;
            let base = mentioned.len() as f64 / turn_count as f64;
            eprintln!(
                "max_facts={max_facts:>2}/session: {facts_total} facts; evidence turns mentioned \
                 {hit}/{} = {:.1}%; all turns mentioned {}/{turn_count} = {:.1}%; lift {:.2}",
                evidence.len(),
                share * 100.0,
                mentioned.len(),
                base * 100.0,
                share / base
            );
            report.insert(max_facts, (share, base));
        }
        // The scoring must beat picking turns at random: evidence turns are mentioned
        // more often than turns in general.
        for (max_facts, (share, base)) in report {
            assert!(share > base, "max_facts={max_facts}: {share:.3} <= {base:.3}");
        }
    }
}
