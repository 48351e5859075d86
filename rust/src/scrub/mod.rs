//! Secret scrubbing (placeholder; being written).
