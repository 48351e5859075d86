//! How large a segment may grow, and which segments are merged together.
//!
//! A forget purges its documents by rewriting the segments that held them
//! (`purge.rs`), so a segment's size is what one forget can cost: with no cap a
//! bulk save of a million entries ends in one segment, and forgetting one of
//! them rewrote the whole index. Merges therefore never build a segment of more
//! than `SEGMENT_DOCS` documents: a bulk save's segments are merged in groups
//! under the cap, background merges (tantivy's log policy) have their
//! candidates split the same way, and a purge rewrites each segment on its own
//! (small ones in groups under the cap). A store of up to `SEGMENT_DOCS`
//! entries keeps one segment, the fastest to search.

use tantivy::index::{SegmentId, SegmentMeta};
use tantivy::indexer::{LogMergePolicy, MergeCandidate, MergePolicy};

/// The most documents a merge builds into one segment (docs/performance.md,
/// "Segments").
pub const SEGMENT_DOCS: u32 = 1 << 18;

/// Background merges: tantivy's log policy, with every candidate split into
/// groups under `SEGMENT_DOCS`.
#[derive(Debug)]
pub struct CappedMerges {
    log: LogMergePolicy,
    cap: u32,
}

impl CappedMerges {
    pub fn new() -> Self {
        Self::with_cap(SEGMENT_DOCS)
    }

    fn with_cap(cap: u32) -> Self {
        let mut log = LogMergePolicy::default();
        log.set_max_docs_before_merge(cap as usize);
        CappedMerges { log, cap }
    }
}

impl MergePolicy for CappedMerges {
    fn compute_merge_candidates(&self, segments: &[SegmentMeta]) -> Vec<MergeCandidate> {
        let docs =
            |id: &SegmentId| segments.iter().find(|meta| meta.id() == *id).map_or(0, SegmentMeta::num_docs);
        self.log
            .compute_merge_candidates(segments)
            .into_iter()
            .flat_map(|candidate| {
                let sized: Vec<(SegmentId, u32)> = candidate.0.iter().map(|id| (*id, docs(id))).collect();
                groups(sized, self.cap)
            })
            .filter(|group| group.len() > 1)
            .map(MergeCandidate)
            .collect()
    }
}

/// Splits segments (id, live documents) into groups whose documents add up to
/// at most `cap` (a segment already over it stands alone): largest first, each
/// into the first group with room. Groups of one are returned too: a purge
/// rewrites such a segment alone, a merge skips it.
pub fn groups(mut segments: Vec<(SegmentId, u32)>, cap: u32) -> Vec<Vec<SegmentId>> {
    segments.sort_by_key(|s| std::cmp::Reverse(s.1));
    let mut out: Vec<(Vec<SegmentId>, u64)> = Vec::new();
    for (id, docs) in segments {
        match out.iter_mut().find(|(_, total)| total + u64::from(docs) <= u64::from(cap)) {
            Some((group, total)) => {
                group.push(id);
                *total += u64::from(docs);
            }
            None => out.push((vec![id], u64::from(docs))),
        }
    }
    out.into_iter().map(|(group, _)| group).collect()
}

/// `groups` over segment metas, counting their live documents.
pub fn groups_of(metas: &[SegmentMeta]) -> Vec<Vec<SegmentId>> {
    groups(metas.iter().map(|meta| (meta.id(), meta.num_docs())).collect(), SEGMENT_DOCS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<SegmentId> {
        (0..n).map(|_| SegmentId::generate_random()).collect()
    }

    #[test]
    fn no_group_goes_over_the_cap_and_every_segment_is_placed_once() {
        let id = ids(7);
        let sizes = [50, 50, 50, 90, 10, 200, 5];
        let sized: Vec<(SegmentId, u32)> = id.iter().copied().zip(sizes).collect();
        let out = groups(sized.clone(), 100);
        let mut seen: Vec<SegmentId> = out.iter().flatten().copied().collect();
        seen.sort();
        let mut all = id.clone();
        all.sort();
        assert_eq!(seen, all);
        for group in &out {
            let total: u32 = group.iter().map(|g| sized.iter().find(|s| s.0 == *g).unwrap().1).sum();
            assert!(group.len() == 1 || total <= 100, "{total}");
        }
        // The oversized segment stands alone; the rest pack into few groups.
        assert!(out.iter().any(|g| g == &vec![id[5]]));
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn the_policy_never_proposes_a_merge_over_the_cap() {
        let policy = CappedMerges::with_cap(100);
        let index = tantivy::Index::create_in_ram(tantivy::schema::Schema::builder().build());
        let metas: Vec<SegmentMeta> =
            (0..16).map(|_| index.new_segment_meta(SegmentId::generate_random(), 30)).collect();
        let candidates = policy.compute_merge_candidates(&metas);
        assert!(!candidates.is_empty());
        for candidate in candidates {
            assert!(candidate.0.len() > 1);
            assert!(candidate.0.len() * 30 <= 100);
        }
    }
}
