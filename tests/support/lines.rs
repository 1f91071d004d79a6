//! Byte ranges of a chain file's lines (shared by the tamper property tests).

/// Byte ranges `[start, end)` of each line, the newline included. The chain must end with a
/// newline (every append writes one).
pub fn line_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            spans.push((start, i + 1));
            start = i + 1;
        }
    }
    assert_eq!(start, bytes.len(), "chain ends with a newline");
    spans
}
