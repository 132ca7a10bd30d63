"""JSON for the interop scripts' output: JSON has no NaN or infinities, so non-finite floats
are written as the strings "NaN", "Infinity", "-Infinity" (the tests read them back so)."""
import math


def clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    # numpy scalars and arrays (pyarrow's and DuckDB's values)
    if hasattr(v, "tolist"):
        return clean(v.tolist())
    return v
