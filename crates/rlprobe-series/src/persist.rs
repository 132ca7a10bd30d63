//! Persistence: a condition must hold for k of the last n logged points before it counts,
//! so one noisy point never raises a finding; a cooldown keeps one episode from being
//! reported again and again.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Episode {
    /// First flagged point of the window that met k of n: the onset.
    pub onset: usize,
    /// The point at which k of n was first met.
    pub trigger: usize,
}

/// Episodes where at least `k` of the last `n` points are flagged. After a trigger, no new
/// episode starts for `cooldown` points. `None` entries (a point whose flag could not be
/// computed, e.g. a missing value) count as not flagged but do take a place in the window.
pub fn persistent(flags: &[Option<bool>], k: usize, n: usize, cooldown: usize) -> Vec<Episode> {
    let (k, n) = (k.max(1), n.max(1));
    let mut out = Vec::new();
    let mut count = 0usize;
    let mut quiet_until = 0usize;
    for i in 0..flags.len() {
        if flags[i] == Some(true) {
            count += 1;
        }
        if i >= n && flags[i - n] == Some(true) {
            count -= 1;
        }
        if count >= k && i >= quiet_until {
            let start = i + 1 - n.min(i + 1);
            let onset = (start..=i).find(|&j| flags[j] == Some(true)).unwrap_or(i);
            out.push(Episode { onset, trigger: i });
            quiet_until = i + 1 + cooldown;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> Vec<Option<bool>> {
        s.chars()
            .map(|c| match c {
                '1' => Some(true),
                '0' => Some(false),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn k_of_n_with_onset_and_cooldown() {
        // a lone flag never counts; three of five does, dated at its first flag
        let eps = persistent(&f("0100000110100000"), 3, 5, 100);
        assert_eq!(
            eps,
            vec![Episode {
                onset: 7,
                trigger: 10
            }]
        );
        // the cooldown suppresses re-reporting, then a later episode is reported again
        let eps = persistent(&f("1110000000111"), 3, 3, 5);
        assert_eq!(
            eps,
            vec![
                Episode {
                    onset: 0,
                    trigger: 2
                },
                Episode {
                    onset: 10,
                    trigger: 12
                }
            ]
        );
        let eps = persistent(&f("111111"), 3, 3, 0);
        assert_eq!(
            eps.len(),
            4,
            "no cooldown: every point that still meets k of n"
        );
        // unknown points take a place in the window but never count
        assert!(persistent(&f("1-1-1-"), 3, 3, 0).is_empty());
        assert!(persistent(&[], 1, 1, 0).is_empty());
    }
}
