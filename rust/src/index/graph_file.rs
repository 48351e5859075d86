//! The vector graph on disk, beside the search index: `vectors.graph` (usearch's
//! format) and `vectors.graph.json` (the database it was built for, its
//! length and CRC-32).
//!
//! A graph is read only when its check file names this database and its bytes
//! match the checksum, so usearch never parses a damaged or foreign file.
//! What it then holds is checked vector by vector against the store's own
//! (`Dense::adopt`). Anything else is deleted and the graph built again.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::json;

use super::graph::Graph;
use crate::error::{Error, Result};

const GRAPH: &str = "vectors.graph";
const CHECK: &str = "vectors.graph.json";
/// 2: connectivity 32 (a graph of format 1, connectivity 16, is built again).
const FORMAT: u64 = 2;

fn paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join(GRAPH), dir.join(CHECK))
}

/// The CRC-32 and length of the file at `path`.
fn checksum(path: &Path) -> std::io::Result<(u32, u64)> {
    let mut file = fs::File::open(path)?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok((hasher.finalize(), len));
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
}

/// Writes `graph` for `database` into `dir`: the graph to a temporary file,
/// then renamed into place after the check file's own temporary is written,
/// each synced. A crash in between leaves a pair that does not match: read as
/// no graph.
pub fn save(dir: &Path, database: &str, graph: &Graph) -> Result<()> {
    let (path, check) = paths(dir);
    let (tmp, check_tmp) = (dir.join(format!("{GRAPH}.tmp")), dir.join(format!("{CHECK}.tmp")));
    graph.save(&tmp)?;
    fs::File::open(&tmp)?.sync_all()?;
    let (crc, bytes) = checksum(&tmp)?;
    let body =
        json!({"format": FORMAT, "database": database, "dim": graph.dim(), "bytes": bytes, "crc32": crc});
    let mut file = fs::File::create(&check_tmp)?;
    file.write_all(body.to_string().as_bytes())?;
    file.sync_all()?;
    fs::rename(&tmp, &path)?;
    fs::rename(&check_tmp, &check)?;
    fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// The graph saved in `dir` for `database` with `dim` dimensions, if there is
/// one that checks out; a file that does not is deleted.
pub fn load(dir: &Path, database: &str, dim: usize) -> Option<Graph> {
    let (path, check) = paths(dir);
    if !path.exists() && !check.exists() {
        return None;
    }
    match read(&path, &check, database, dim) {
        Ok(graph) => Some(graph),
        Err(why) => {
            log::warn!("rebuilding the vector graph at {}: {why}", path.display());
            remove(dir);
            None
        }
    }
}

fn read(path: &Path, check: &Path, database: &str, dim: usize) -> Result<Graph> {
    let expected: serde_json::Value = serde_json::from_slice(&fs::read(check)?)
        .map_err(|e| Error::Internal(format!("its check file does not parse: {e}")))?;
    let field = |name: &str| expected.get(name).and_then(serde_json::Value::as_u64);
    if field("format") != Some(FORMAT) {
        return Err(Error::Internal("its check file is of another format".into()));
    }
    if database.is_empty() || expected.get("database").and_then(|d| d.as_str()) != Some(database) {
        return Err(Error::Internal("it was built for another database".into()));
    }
    if field("dim") != Some(dim as u64) {
        return Err(Error::Internal("its vectors have another dimension".into()));
    }
    let (crc, bytes) = checksum(path)?;
    if field("bytes") != Some(bytes) || field("crc32") != Some(u64::from(crc)) {
        return Err(Error::Internal("its bytes do not match their checksum".into()));
    }
    Graph::load(path, dim)
}

/// Deletes the graph's files in `dir`, if any.
pub fn remove(dir: &Path) {
    let (path, check) = paths(dir);
    for file in [check, path] {
        if let Err(err) = fs::remove_file(&file) {
            if err.kind() != std::io::ErrorKind::NotFound {
                log::warn!("cannot delete {}: {err}", file.display());
            }
        }
    }
}
