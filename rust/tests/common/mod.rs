//! Test data shared by the engine's integration tests.
#![allow(dead_code)] // each test file uses its own part

use std::path::PathBuf;

/// The LoCoMo dev conversations: `$CONTEXTFORGE_LOCOMO_DIR`, else
/// `../shared/data/locomo-dev` beside the repository; `None` when absent.
pub fn locomo_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CONTEXTFORGE_LOCOMO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/locomo-dev"));
    dir.is_dir().then_some(dir)
}

/// Every turn's text, conversation by conversation, sessions in order; empty
/// when the data is absent.
pub fn locomo_turns() -> Vec<String> {
    let Some(dir) = locomo_dir() else { return Vec::new() };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    let mut lines = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let Ok(serde_json::Value::Object(conv)) = serde_json::from_str(&text) else { continue };
        let mut sessions: Vec<(u32, &Vec<serde_json::Value>)> = conv
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v.as_array()?)))
            .collect();
        sessions.sort_by_key(|(n, _)| *n);
        for (_, turns) in sessions {
            lines.extend(turns.iter().filter_map(|t| t.get("text")?.as_str().map(str::to_owned)));
        }
    }
    lines
}
