//! How far a name is from another, for the "did you mean" of a name that
//! is not defined or a keyword argument a builtin does not take.

/// The edits (Levenshtein distance) from `a` to `b`, where it is few
/// enough that `b` may be what was meant by `a`: one for a name of up to
/// four letters (two would take any short name for any other: `x` for
/// `LL`), two for a longer one. `None` for `b` equal to `a`, for one
/// farther, and for a name longer than any a person misspells (the
/// distance is quadratic in the lengths).
pub fn near(a: &str, b: &str) -> Option<usize> {
    let most = if a.chars().count() <= 4 { 1 } else { 2 };
    if a.len() > 64 || a == b || a.len().abs_diff(b.len()) > most {
        return None;
    }
    Some(edit_distance(a, b)).filter(|d| *d <= most)
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::near;

    #[test]
    fn near_names_are_few_edits_away() {
        assert_eq!(near("chunk_factr", "chunk_factor"), Some(1));
        assert_eq!(near("inplcae", "inplace"), Some(2));
        assert_eq!(near("tb", "tb"), None);
        assert_eq!(near("x", "LL"), None);
        assert_eq!(near("tbb", "tb"), Some(1));
        assert_eq!(near("num_rank", "relaxed"), None);
    }
}
