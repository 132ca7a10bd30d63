"""Reads runs with pyarrow, polars and DuckDB as docs/format.md tells a user to, and the
obvious naive ways; prints JSON (test/tool-recipes.test.ts compares it with RunReader).

usage: py_tool_recipes.py NAME=RUN_DIR [NAME=RUN_DIR ...]

For each run, over the run directory and its rank-NNN/ recordings:
  steps    per recording: the source (steps.parquet when it exists, else steps/*.parquet),
           the documented reads (pyarrow read_table and dataset, polars with
           missing_columns='insert', DuckDB with union_by_name) and the naive ones
  samples  every recording's samples/*.parquet together, documented and naive reads
  spans    the last write per span_id (docs/format.md#spans) with each tool, and naive reads
  files    each *.parquet of steps/, samples/, spans/: its columns and row count
A read gives {"columns", "types", "rows"} or, when it raised, {"error"}. Naive reads are
either held to "every column or raise" by the test ("naive") or only recorded ("observed").
Non-finite floats are written as the strings "NaN", "Infinity", "-Infinity".
"""
import glob
import json
import os
import re
import sys

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from json_safe import clean


def sql(path):
    return path.replace("'", "''")


def recordings(run_dir):
    """The run directory and its rank-NNN/ recordings (those with a manifest), by rank."""
    ranks = sorted(
        (p for p in glob.glob(os.path.join(run_dir, "rank-*")) if os.path.isfile(os.path.join(p, "manifest.json"))),
        key=lambda p: int(os.path.basename(p)[5:]),
    )
    return [run_dir, *ranks]


def from_arrow(table):
    return {"columns": table.column_names, "types": {f.name: str(f.type) for f in table.schema}, "rows": table.to_pylist()}


def from_polars(df):
    return {"columns": df.columns, "types": {k: str(t) for k, t in df.schema.items()}, "rows": df.to_dicts()}


def from_duckdb(rel):
    cols = rel.columns
    return {"columns": cols, "types": {c: str(t) for c, t in zip(cols, rel.types)}, "rows": [dict(zip(cols, r)) for r in rel.fetchall()]}


def attempt(read):
    try:
        return read()
    except Exception as error:  # noqa: BLE001 - a raised read is an outcome the test checks
        return {"error": f"{type(error).__name__}: {error}"}


def shape(result):
    """A naive read's outcome without its rows: columns and row count, or the error."""
    if "error" in result:
        return result
    return {"columns": result["columns"], "row_count": len(result["rows"])}


def parquet_files(directory):
    return sorted(f for f in os.listdir(directory) if f.endswith(".parquet")) if os.path.isdir(directory) else []


def files_of(run_dir):
    out = {}
    for rec in recordings(run_dir):
        for stream in ("steps", "samples", "spans"):
            directory = os.path.join(rec, stream)
            if not os.path.isdir(directory):
                continue
            rel = os.path.relpath(directory, run_dir)
            out[rel] = [
                {"name": f, "rows": pq.read_metadata(os.path.join(directory, f)).num_rows, "columns": pq.read_schema(os.path.join(directory, f)).names,
                 "types": {fl.name: str(fl.type) for fl in pq.read_schema(os.path.join(directory, f))}}
                for f in parquet_files(directory)
            ]
    return out


def con():
    return duckdb.connect()


def steps_of(rec):
    compacted = os.path.join(rec, "steps.parquet")
    if os.path.isfile(compacted):
        source, pattern = compacted, compacted
    else:
        source, pattern = os.path.join(rec, "steps"), os.path.join(rec, "steps", "*.parquet")
    recipes = {
        "pyarrow_read_table": attempt(lambda: from_arrow(pq.read_table(source))),
        "pyarrow_dataset": attempt(lambda: from_arrow(ds.dataset(source, format="parquet").to_table())),
        "polars": attempt(lambda: from_polars(pl.read_parquet(pattern, missing_columns="insert"))),
        "duckdb": attempt(lambda: from_duckdb(con().sql(f"SELECT * FROM read_parquet('{sql(pattern)}', union_by_name = true)"))),
    }
    parts = os.path.join(rec, "steps")
    naive, observed = {}, {}
    if os.path.isdir(parts):
        every = os.path.join(parts, "*.parquet")
        naive = {
            "duckdb_glob": shape(attempt(lambda: from_duckdb(con().sql(f"SELECT * FROM read_parquet('{sql(every)}')")))),
            "polars_read_glob": shape(attempt(lambda: from_polars(pl.read_parquet(every)))),
            "polars_scan_glob": shape(attempt(lambda: from_polars(pl.scan_parquet(every).collect()))),
            "pyarrow_read_table_dir": shape(attempt(lambda: from_arrow(pq.read_table(parts)))),
            "pyarrow_dataset_dir": shape(attempt(lambda: from_arrow(ds.dataset(parts, format="parquet").to_table()))),
        }
        only_parts = os.path.join(parts, "part-*.parquet")
        observed = {
            "duckdb_part_glob": shape(attempt(lambda: from_duckdb(con().sql(f"SELECT * FROM read_parquet('{sql(only_parts)}')")))),
            "pyarrow_dataset_part_files": shape(attempt(lambda: from_arrow(ds.dataset(sorted(glob.glob(only_parts)), format="parquet").to_table()))),
        }
    return {"source": os.path.relpath(source, rec), "recipes": recipes, "naive": naive, "observed": observed}


def samples_of(run_dir):
    dirs = [os.path.join(rec, "samples") for rec in recordings(run_dir) if parquet_files(os.path.join(rec, "samples"))]
    globs = [os.path.join(d, "*.parquet") for d in dirs]
    glob_list = ", ".join(f"'{sql(g)}'" for g in globs)
    recipes = {
        "pyarrow_read_table": attempt(lambda: from_arrow(pa.concat_tables([pq.read_table(d) for d in dirs], promote_options="default"))),
        "polars": attempt(lambda: from_polars(pl.concat([pl.read_parquet(g, missing_columns="insert") for g in globs], how="diagonal_relaxed"))),
        "duckdb": attempt(lambda: from_duckdb(con().sql(f"SELECT * FROM read_parquet([{glob_list}], union_by_name = true)"))),
    }
    naive = {}
    for d, g in zip(dirs, globs):
        rel = os.path.relpath(d, run_dir)
        naive[f"{rel} duckdb_glob"] = shape(attempt(lambda: from_duckdb(con().sql(f"SELECT * FROM read_parquet('{sql(g)}')"))))
        naive[f"{rel} polars_read_glob"] = shape(attempt(lambda: from_polars(pl.read_parquet(g))))
        naive[f"{rel} pyarrow_read_table_dir"] = shape(attempt(lambda: from_arrow(pq.read_table(d))))
    return {"dirs": [os.path.relpath(d, run_dir) for d in dirs], "recipes": recipes, "naive": naive}


def part_index(name):
    m = re.fullmatch(r"part-(\d+)\.parquet", name)
    return int(m.group(1)) if m else -1


def spans_pyarrow(directory):
    """The compacted file first, then the parts by index; the last write of each span_id."""
    names = sorted(parquet_files(directory), key=lambda n: (n != "spans.parquet", part_index(n)))
    last = {}
    for name in names:
        for row in pq.read_table(os.path.join(directory, name)).to_pylist():
            last.pop(row["span_id"], None)
            last[row["span_id"]] = row
    return list(last.values())


def spans_polars(directory):
    df = pl.read_parquet(os.path.join(directory, "*.parquet"), include_file_paths="file", row_index_name="row")
    df = df.with_columns(pl.col("file").str.ends_with("/spans.parquet").alias("compacted"))
    df = df.sort(["compacted", "file", "row"], descending=[True, False, False])
    return df.unique(subset="span_id", keep="last", maintain_order=True).drop(["file", "row", "compacted"])


def spans_duckdb(directory):
    pattern = sql(os.path.join(directory, "*.parquet"))
    compacted = sql(os.path.join(directory, "spans.parquet"))
    return con().sql(
        f"SELECT * EXCLUDE (filename, file_row_number) FROM read_parquet('{pattern}', filename = true, file_row_number = true) "
        f"QUALIFY row_number() OVER (PARTITION BY span_id ORDER BY filename = '{compacted}', filename DESC, file_row_number DESC) = 1"
    )


def spans_of(run_dir):
    dirs = [os.path.join(rec, "spans") for rec in recordings(run_dir) if parquet_files(os.path.join(rec, "spans"))]

    def arrow():
        rows = [row for d in dirs for row in spans_pyarrow(d)]
        names = pq.read_schema(os.path.join(dirs[0], parquet_files(dirs[0])[0])).names
        return {"columns": names, "types": {}, "rows": rows}

    def polars():
        return from_polars(pl.concat([spans_polars(d) for d in dirs], how="diagonal_relaxed"))

    def duck():
        parts = [from_duckdb(spans_duckdb(d)) for d in dirs]
        return {"columns": parts[0]["columns"], "types": parts[0]["types"], "rows": [r for p in parts for r in p["rows"]]}

    recipes = {"pyarrow": attempt(arrow), "polars": attempt(polars), "duckdb": attempt(duck)}
    naive = {}
    for d in dirs:
        rel = os.path.relpath(d, run_dir)
        every = os.path.join(d, "*.parquet")
        naive[f"{rel} duckdb_glob"] = shape(attempt(lambda: from_duckdb(con().sql(f"SELECT * FROM read_parquet('{sql(every)}')"))))
        naive[f"{rel} polars_read_glob"] = shape(attempt(lambda: from_polars(pl.read_parquet(every))))
        naive[f"{rel} pyarrow_read_table_dir"] = shape(attempt(lambda: from_arrow(pq.read_table(d))))
    return {"dirs": [os.path.relpath(d, run_dir) for d in dirs], "recipes": recipes, "naive": naive}


def main(args):
    out = {}
    for arg in args:
        name, run_dir = arg.split("=", 1)
        out[name] = {
            "files": files_of(run_dir),
            "steps": {os.path.relpath(rec, run_dir): steps_of(rec) for rec in recordings(run_dir)},
            "samples": samples_of(run_dir),
            "spans": spans_of(run_dir),
        }
    print(json.dumps(clean(out), default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
