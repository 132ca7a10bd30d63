//! Which rows of a column hold a value. Most step columns never miss a step: until a
//! column's first null its validity is only a row count, so a million-step read of 47
//! columns does not write (and have the kernel zero first) 47 MB of `true`.

/// The validity of a column's rows.
#[derive(Debug, Clone, Default)]
pub struct Validity {
    len: usize,
    /// One flag per row, from the first null on; None while every row is set.
    flags: Option<Vec<bool>>,
    /// Rows to make room for when the flags are first needed.
    capacity: usize,
}

impl PartialEq for Validity {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Validity {
    /// No rows yet; room for `rows` flags should a null come.
    pub fn with_capacity(rows: usize) -> Validity {
        Validity {
            len: 0,
            flags: None,
            capacity: rows,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `row` holds a value. Panics past the end, as indexing does.
    pub fn get(&self, row: usize) -> bool {
        match &self.flags {
            Some(f) => f[row],
            None => {
                assert!(row < self.len, "row {row} of {}", self.len);
                true
            }
        }
    }

    /// One flag per row; None when no row was ever null.
    pub fn flags(&self) -> Option<&[bool]> {
        self.flags.as_deref()
    }

    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        let flags = self.flags.as_deref();
        (0..self.len).map(move |i| flags.is_none_or(|f| f[i]))
    }

    /// Every flag, as a vector.
    pub fn to_vec(&self) -> Vec<bool> {
        self.iter().collect()
    }

    pub fn null_count(&self) -> usize {
        self.flags
            .as_ref()
            .map_or(0, |f| f.iter().filter(|ok| !**ok).count())
    }

    fn flags_mut(&mut self) -> &mut Vec<bool> {
        let (len, capacity) = (self.len, self.capacity);
        self.flags.get_or_insert_with(|| {
            let mut f = Vec::with_capacity(capacity.max(len + 1));
            f.resize(len, true);
            f
        })
    }

    pub fn push(&mut self, ok: bool) {
        self.push_run(ok, 1);
    }

    /// `n` rows, all set or all null.
    pub fn push_run(&mut self, ok: bool, n: usize) {
        if !ok || self.flags.is_some() {
            let f = self.flags_mut();
            f.resize(f.len() + n, ok);
        }
        self.len += n;
    }

    pub fn extend(&mut self, flags: impl IntoIterator<Item = bool>) {
        for ok in flags {
            self.push(ok);
        }
    }

    pub fn append(&mut self, other: &Validity) {
        match &other.flags {
            None => self.push_run(true, other.len),
            Some(f) => {
                self.flags_mut().extend_from_slice(f);
                self.len += other.len;
            }
        }
    }

    pub fn truncate(&mut self, rows: usize) {
        if let Some(f) = &mut self.flags {
            f.truncate(rows);
        }
        self.len = self.len.min(rows);
    }
}

impl From<Vec<bool>> for Validity {
    fn from(flags: Vec<bool>) -> Validity {
        let len = flags.len();
        let all = flags.iter().all(|ok| *ok);
        Validity {
            len,
            flags: (!all).then_some(flags),
            capacity: len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_appear_with_the_first_null_and_read_the_same_either_way() {
        let mut v = Validity::with_capacity(8);
        v.push_run(true, 3);
        assert_eq!(v.flags(), None, "no flags while every row is set");
        assert_eq!(v.null_count(), 0);
        v.push(false);
        v.push(true);
        assert_eq!(v.flags(), Some(&[true, true, true, false, true][..]));
        assert_eq!(v.null_count(), 1);
        assert!(v.get(2) && !v.get(3));
        let mut w = Validity::default();
        w.push_run(true, 2);
        w.append(&v);
        assert_eq!(w.to_vec(), [true, true, true, true, true, false, true]);
        let mut all = Validity::default();
        all.append(&Validity::from(vec![true; 4]));
        assert_eq!(all.flags(), None);
        assert_eq!(all, Validity::from(vec![true; 4]));
        w.truncate(4);
        assert_eq!(w.len(), 4);
        assert_eq!(
            w,
            Validity::from(vec![true; 4]),
            "equal by rows, not by form"
        );
        w.extend([false, true]);
        assert_eq!(w.to_vec(), [true, true, true, true, false, true]);
    }

    #[test]
    #[should_panic(expected = "row 2 of 2")]
    fn a_row_past_the_end_panics_as_indexing_does() {
        let mut v = Validity::default();
        v.push_run(true, 2);
        v.get(2);
    }
}
