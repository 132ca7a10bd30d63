//! The step table's column vocabulary (docs/format.md#steps) and the per-recorder registry
//! that hands out compact column ids to the hot path.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// How a column is stored. Mirrors what the Python `rlprobe` package writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnKind {
    F64,
    /// Counts (`nan_count`, `inf_count`, `step`, `rank`): int64 on disk.
    I64,
    /// `kl_positional`: list<float64>.
    ListF64,
}

impl ColumnKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnKind::F64 => "f64",
            ColumnKind::I64 => "i64",
            ColumnKind::ListF64 => "list_f64",
        }
    }
}

pub const STEP: &str = "step";
pub const TIMESTAMP: &str = "timestamp";
pub const RANK: &str = "rank";
pub const REWARD_COMPONENT_PREFIX: &str = "reward_component.";
pub const EXTRA_PREFIX: &str = "extra.";

/// The optional StepRecord fields, in the format's order (which is also the column order
/// of every table we write).
pub const STEP_FIELDS: &[(&str, ColumnKind)] = &[
    ("reward_mean", ColumnKind::F64),
    ("reward_std", ColumnKind::F64),
    ("reward_min", ColumnKind::F64),
    ("reward_max", ColumnKind::F64),
    ("kl_mean", ColumnKind::F64),
    ("kl_max", ColumnKind::F64),
    ("kl_positional", ColumnKind::ListF64),
    ("entropy_mean", ColumnKind::F64),
    ("logprob_mean", ColumnKind::F64),
    ("ratio_mean", ColumnKind::F64),
    ("ratio_p95", ColumnKind::F64),
    ("clip_fraction", ColumnKind::F64),
    ("adv_mean", ColumnKind::F64),
    ("adv_std", ColumnKind::F64),
    ("adv_zero_frac", ColumnKind::F64),
    ("group_reward_std_mean", ColumnKind::F64),
    ("zero_variance_group_frac", ColumnKind::F64),
    ("value_loss", ColumnKind::F64),
    ("value_explained_variance", ColumnKind::F64),
    ("value_clip_fraction", ColumnKind::F64),
    ("loss", ColumnKind::F64),
    ("lr", ColumnKind::F64),
    ("grad_norm", ColumnKind::F64),
    ("grad_norm_post_clip", ColumnKind::F64),
    ("nan_count", ColumnKind::I64),
    ("inf_count", ColumnKind::I64),
    ("weight_update_ratio", ColumnKind::F64),
    ("completion_len_mean", ColumnKind::F64),
    ("completion_len_p95", ColumnKind::F64),
    ("completion_len_max", ColumnKind::F64),
    ("max_len_hit_frac", ColumnKind::F64),
    ("eos_rate", ColumnKind::F64),
    ("repetition_rate", ColumnKind::F64),
    ("truncation_rate", ColumnKind::F64),
    ("step_time_s", ColumnKind::F64),
    ("generation_time_s", ColumnKind::F64),
    ("optimization_time_s", ColumnKind::F64),
];

/// Columns every step table carries, in front of the optional ones.
pub const FIXED_STEP_COLUMNS: &[(&str, ColumnKind)] = &[
    (STEP, ColumnKind::I64),
    (TIMESTAMP, ColumnKind::F64),
    (RANK, ColumnKind::I64),
];

/// Guards against a metric name that embeds a counter (`extra: {[`loss_${step}`]: …}`),
/// which would otherwise grow the table without bound.
pub const MAX_COLUMNS: usize = 4096;

/// Sort key for the canonical column order: fixed, known fields, components, extras,
/// anything else (columns written by other tools) last; ties by name.
pub fn column_order_key(name: &str) -> (u8, usize, &str) {
    if let Some(i) = FIXED_STEP_COLUMNS.iter().position(|(n, _)| *n == name) {
        return (0, i, "");
    }
    if let Some(i) = STEP_FIELDS.iter().position(|(n, _)| *n == name) {
        return (1, i, "");
    }
    if name.starts_with(REWARD_COMPONENT_PREFIX) {
        return (2, 0, name);
    }
    if name.starts_with(EXTRA_PREFIX) {
        return (3, 0, name);
    }
    (4, 0, name)
}

/// The column a top-level key of a step record lands in, or why it cannot be recorded.
/// Unknown top-level keys become `extra.<key>`, as in the Python package.
pub fn resolve_step_key(key: &str) -> Result<(String, ColumnKind)> {
    let refuse = |reason: String| {
        Err(Error::InvalidStepKey {
            key: key.to_string(),
            reason,
        })
    };
    match key {
        STEP | TIMESTAMP => refuse(format!("`{key}` is encoded in the record header")),
        RANK => refuse("`rank` is set by the recorder, not per step".into()),
        "reward_components" | "extra" => refuse(format!("`{key}` is a dict of numbers")),
        "" => refuse("empty field name".into()),
        _ => {
            if let Some((_, kind)) = STEP_FIELDS.iter().find(|(n, _)| *n == key) {
                Ok((key.to_string(), *kind))
            } else if let Some(rest) = key
                .strip_prefix(REWARD_COMPONENT_PREFIX)
                .or_else(|| key.strip_prefix(EXTRA_PREFIX))
            {
                if rest.is_empty() {
                    refuse(format!("empty name after prefix in `{key}`"))
                } else {
                    Ok((key.to_string(), ColumnKind::F64))
                }
            } else {
                Ok((format!("{EXTRA_PREFIX}{key}"), ColumnKind::F64))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct ColumnDef {
    pub name: String,
    pub kind: ColumnKind,
}

/// Column ids handed to the producer. Append-only: an id never changes meaning, so the
/// writer can cache a snapshot and refresh it only when it meets an id it has not seen.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    defs: Vec<ColumnDef>,
    by_name: HashMap<String, u32>,
}

impl Registry {
    /// Registers (or finds) the column for a top-level key or a prefixed dict entry.
    pub fn register(&mut self, key: &str) -> Result<(u32, ColumnKind)> {
        let (name, kind) = resolve_step_key(key)?;
        if let Some(&id) = self.by_name.get(&name) {
            return Ok((id, self.defs[id as usize].kind));
        }
        if self.defs.len() >= MAX_COLUMNS {
            return Err(Error::TooManyColumns {
                name,
                limit: MAX_COLUMNS,
            });
        }
        let id = self.defs.len() as u32;
        self.defs.push(ColumnDef {
            name: name.clone(),
            kind,
        });
        self.by_name.insert(name, id);
        Ok((id, kind))
    }

    /// Registers the keys of one record together: all of them, or — past the column
    /// budget, or on a key that cannot be a column — none, so a refused record leaves the
    /// registry as it found it.
    pub fn register_all(&mut self, keys: &[String]) -> Result<Vec<(u32, ColumnKind)>> {
        let mut resolved = Vec::with_capacity(keys.len());
        for key in keys {
            resolved.push(resolve_step_key(key)?);
        }
        let new_names: std::collections::HashSet<&str> = resolved
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !self.by_name.contains_key(*n))
            .collect();
        if self.defs.len() + new_names.len() > MAX_COLUMNS {
            return Err(Error::ColumnBudget {
                adding: new_names.len(),
                have: self.defs.len(),
                limit: MAX_COLUMNS,
            });
        }
        Ok(resolved
            .into_iter()
            .map(|(name, kind)| match self.by_name.get(&name) {
                Some(&id) => (id, self.defs[id as usize].kind),
                None => {
                    let id = self.defs.len() as u32;
                    self.defs.push(ColumnDef {
                        name: name.clone(),
                        kind,
                    });
                    self.by_name.insert(name, id);
                    (id, kind)
                }
            })
            .collect())
    }

    pub fn get(&self, id: u32) -> Option<&ColumnDef> {
        self.defs.get(id as usize)
    }

    pub fn len(&self) -> usize {
        self.defs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_become_extras_and_known_keep_their_kind() {
        let mut r = Registry::default();
        assert_eq!(r.register("loss").unwrap(), (0, ColumnKind::F64));
        assert_eq!(r.register("nan_count").unwrap(), (1, ColumnKind::I64));
        assert_eq!(
            r.register("kl_positional").unwrap(),
            (2, ColumnKind::ListF64)
        );
        assert_eq!(r.register("my_metric").unwrap(), (3, ColumnKind::F64));
        assert_eq!(r.get(3).unwrap().name, "extra.my_metric");
        // the same column through its prefixed name resolves to the same id
        assert_eq!(r.register("extra.my_metric").unwrap().0, 3);
        assert_eq!(r.register("reward_component.fmt").unwrap().0, 4);
        assert!(r.register("rank").is_err());
        assert!(r.register("extra.").is_err());
        assert!(r.register("").is_err());
    }

    #[test]
    fn registry_is_bounded() {
        let mut r = Registry::default();
        for i in 0..MAX_COLUMNS {
            r.register(&format!("m{i}")).unwrap();
        }
        assert!(r
            .register("one_more")
            .unwrap_err()
            .to_string()
            .contains("too many"));
        assert!(r.register("m7").is_ok(), "existing columns still resolve");
    }

    #[test]
    fn a_record_past_the_budget_registers_nothing() {
        let mut r = Registry::default();
        r.register("loss").unwrap();
        let huge: Vec<String> = (0..MAX_COLUMNS).map(|i| format!("k{i}")).collect();
        let err = r.register_all(&huge).unwrap_err().to_string();
        assert!(
            err.contains("4096 new columns") && err.contains("nothing of it was added"),
            "{err}"
        );
        assert_eq!(r.len(), 1, "the refused record used none of the budget");
        let ok = r
            .register_all(&["loss".into(), "fresh".into(), "extra.fresh".into()])
            .unwrap();
        assert_eq!(
            ok,
            vec![
                (0, ColumnKind::F64),
                (1, ColumnKind::F64),
                (1, ColumnKind::F64)
            ]
        );
        let bad = r.register_all(&["ok2".into(), "rank".into()]).unwrap_err();
        assert!(
            matches!(&bad, Error::InvalidStepKey { key, .. } if key == "rank"),
            "{bad:?}"
        );
        assert_eq!(bad.code(), crate::Code::Invalid);
        assert!(bad.to_string().contains("`rank`"), "{bad}");
        assert_eq!(r.len(), 2, "a bad key refuses the whole record");
    }

    #[test]
    fn canonical_order() {
        let mut names = vec![
            "extra.b",
            "reward_component.z",
            "loss",
            "step",
            "zzz",
            "reward_mean",
            "rank",
        ];
        names.sort_by_key(|n| column_order_key(n));
        assert_eq!(
            names,
            vec![
                "step",
                "rank",
                "reward_mean",
                "loss",
                "reward_component.z",
                "extra.b",
                "zzz"
            ]
        );
    }
}
