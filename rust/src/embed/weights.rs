//! Reads the f32 tensors of a `model.safetensors` file: an 8-byte little-endian
//! header length, a JSON header of `{name: {dtype, shape, data_offsets}}`, then
//! the raw little-endian bytes.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};

/// One f32 tensor, row-major.
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Every F32 tensor in the file, by name; other dtypes (BERT's i64
/// `position_ids`) are skipped.
pub struct Tensors {
    path: String,
    tensors: HashMap<String, Tensor>,
}

impl Tensors {
    pub fn read(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|err| Error::invalid(format!("cannot read model weights {shown}: {err}")))?;
        let tensors =
            parse(&bytes).map_err(|why| Error::invalid(format!("bad safetensors file {shown}: {why}")))?;
        Ok(Self { path: shown, tensors })
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// Removes and returns the tensor `name`, checking its shape.
    pub fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let tensor = self
            .tensors
            .remove(name)
            .ok_or_else(|| Error::invalid(format!("{}: no f32 tensor named {name}", self.path)))?;
        if tensor.shape != shape {
            return Err(Error::invalid(format!(
                "{}: tensor {name} has shape {:?}, expected {shape:?}",
                self.path, tensor.shape
            )));
        }
        Ok(tensor.data)
    }
}

fn parse(bytes: &[u8]) -> std::result::Result<HashMap<String, Tensor>, String> {
    let len_bytes: [u8; 8] =
        bytes.get(..8).and_then(|b| b.try_into().ok()).ok_or("shorter than its 8-byte header length")?;
    let header_len = usize::try_from(u64::from_le_bytes(len_bytes)).map_err(|e| e.to_string())?;
    let header =
        bytes.get(8..8usize.saturating_add(header_len)).ok_or("header runs past the end of the file")?;
    let data = &bytes[8 + header_len..];
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| format!("header is not a JSON object: {e}"))?;

    let mut tensors = HashMap::new();
    for (name, info) in header {
        if name == "__metadata__" || info.get("dtype").and_then(|d| d.as_str()) != Some("F32") {
            continue;
        }
        let shape: Vec<usize> = info
            .get("shape")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .ok_or_else(|| format!("tensor {name} has no valid shape"))?;
        let offsets: [usize; 2] = info
            .get("data_offsets")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .ok_or_else(|| format!("tensor {name} has no valid data_offsets"))?;
        let raw =
            data.get(offsets[0]..offsets[1]).ok_or_else(|| format!("tensor {name} lies outside the file"))?;
        let count: usize = shape.iter().product();
        if raw.len() != count * 4 {
            return Err(format!("tensor {name}: {} bytes for shape {shape:?}", raw.len()));
        }
        let data = raw.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        tensors.insert(name, Tensor { shape, data });
    }
    Ok(tensors)
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn reads_f32_and_skips_other_dtypes() {
        let header = r#"{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"ids":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}}"#;
        let mut data = Vec::new();
        data.extend_from_slice(&1.5f32.to_le_bytes());
        data.extend_from_slice(&(-2.0f32).to_le_bytes());
        data.extend_from_slice(&7i64.to_le_bytes());
        let tensors = parse(&file(header, &data)).unwrap();
        assert_eq!(tensors["a"].data, vec![1.5, -2.0]);
        assert!(!tensors.contains_key("ids"));
    }

    #[test]
    fn rejects_truncated_files() {
        assert!(parse(&[1, 2, 3]).is_err());
        assert!(parse(&file("{}", &[])[..5]).is_err());
        let header = r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
        assert!(parse(&file(header, &[0; 8])).is_err());
        let header = r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#;
        assert!(parse(&file(header, &[0; 8])).is_err());
    }
}
