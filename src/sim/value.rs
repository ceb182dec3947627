//! What a chunk holds in the simulator: not numbers but the multiset of
//! input contributions summed into it, so that a wrong result can be told in
//! the collective's own terms ("lacks rank 6's input chunk 5").

use std::rc::Rc;

/// One rank's input chunk as written by its user before a given execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Contribution {
    pub execution: u32,
    pub rank: u32,
    pub chunk: u32,
}

/// A sorted multiset of contributions; shared, since copies are common.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents(pub Rc<Vec<Contribution>>);

impl Contents {
    pub fn one(c: Contribution) -> Contents {
        Contents(Rc::new(vec![c]))
    }

    /// The sum of `self` and `other`.
    pub fn plus(&self, other: &Contents) -> Contents {
        let (a, b) = (&self.0, &other.0);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i] <= b[j] {
                out.push(a[i]);
                i += 1;
            } else {
                out.push(b[j]);
                j += 1;
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        Contents(Rc::new(out))
    }

    /// Says how `self` differs from `want`, in words, or `None` if equal.
    pub fn difference(&self, want: &[Contribution]) -> Option<String> {
        if self.0.as_slice() == want {
            return None;
        }
        let missing: Vec<&Contribution> = want.iter().filter(|c| !self.0.contains(c)).collect();
        if let Some(c) = missing.first() {
            let more = if missing.len() > 1 {
                format!(" (and {} more)", missing.len() - 1)
            } else {
                String::new()
            };
            return Some(format!("lacks {}{more}", describe(c)));
        }
        let extra = self.0.iter().find(|c| {
            let have = self.0.iter().filter(|x| x == c).count();
            have > want.iter().filter(|x| x == c).count()
        });
        Some(match extra {
            Some(c) if want.contains(c) => format!("has {} more than once", describe(c)),
            Some(c) => format!("has {}, which does not belong there", describe(c)),
            None => "differs".to_string(),
        })
    }
}

pub fn describe(c: &Contribution) -> String {
    format!(
        "rank {}'s input chunk {} (execution {})",
        c.rank, c.chunk, c.execution
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rank: u32, chunk: u32) -> Contribution {
        Contribution {
            execution: 1,
            rank,
            chunk,
        }
    }

    #[test]
    fn sums_merge_and_differences_read_naturally() {
        let sum = Contents::one(c(1, 0)).plus(&Contents::one(c(0, 0)));
        assert_eq!(sum.difference(&[c(0, 0), c(1, 0)]), None);
        assert_eq!(
            sum.difference(&[c(0, 0), c(1, 0), c(2, 0)]).as_deref(),
            Some("lacks rank 2's input chunk 0 (execution 1)")
        );
        let twice = sum.plus(&Contents::one(c(1, 0)));
        assert_eq!(
            twice.difference(&[c(0, 0), c(1, 0)]).as_deref(),
            Some("has rank 1's input chunk 0 (execution 1) more than once")
        );
    }
}
