"""Reads a run with the Python rlprobe package, pyarrow and DuckDB; prints JSON.

usage: py_read_run.py RUN_DIR
Non-finite floats are written as the strings "NaN", "Infinity", "-Infinity".
"""
import glob
import json
import os
import sys

import duckdb
import pyarrow.parquet as pq
from rlprobe.storage import RunReader

from json_safe import clean


def main(run_dir: str) -> None:
    r = RunReader(run_dir)
    out = {
        "manifest": r.manifest.model_dump(),
        "steps": [s.model_dump(exclude_none=True) for s in r.steps()],
        "samples": [s.model_dump(exclude_none=True) for s in r.samples()],
        "events": [e.model_dump() for e in r.events()],
        "rank_dirs": [os.path.basename(p) for p in r.rank_dirs()],
    }
    steps_file = os.path.join(run_dir, "steps.parquet")
    shards = sorted(glob.glob(os.path.join(run_dir, "samples", "*.parquet")))
    out["pyarrow_steps"] = pq.read_table(steps_file).to_pylist()
    out["pyarrow_step_types"] = {f.name: str(f.type) for f in pq.read_schema(steps_file)}
    out["pyarrow_samples"] = [row for s in shards for row in pq.read_table(s).to_pylist()]
    out["pyarrow_sample_types"] = {f.name: str(f.type) for f in pq.read_schema(shards[0])} if shards else {}
    con = duckdb.connect()
    rel = con.execute(f"SELECT * FROM read_parquet('{steps_file}') ORDER BY step")
    cols = [d[0] for d in rel.description]
    out["duckdb_steps"] = [dict(zip(cols, row)) for row in rel.fetchall()]
    if shards:
        rel = con.execute(
            f"SELECT * FROM read_parquet('{os.path.join(run_dir, 'samples', '*.parquet')}', union_by_name=true) ORDER BY step, sample_id"
        )
        cols = [d[0] for d in rel.description]
        out["duckdb_samples"] = [dict(zip(cols, row)) for row in rel.fetchall()]
    print(json.dumps(clean(out), default=str))


if __name__ == "__main__":
    main(sys.argv[1])
