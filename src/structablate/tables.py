"""Column contracts of the workflow's Parquet tables.

Each table is a polars frame with at least the columns below, in this order and with these
dtypes. :func:`check_table` raises a :class:`TableError` naming the file and the column when a
frame breaks its contract, so a bad hand-made input fails loudly instead of scoring silently.

Offsets are half-open ``[start, end)`` character indices on the document's flat text; a
row's *span* is its ``(doc_id, start, end)``, and :func:`span_identity` compares two tables'
spans (sections and chunks alike).
"""

from __future__ import annotations

import polars as pl

from structablate.errors import StructablateError

SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "documents": {
        "doc_id": pl.String(),
        "corpus": pl.String(),
        "title": pl.String(),
        "text": pl.String(),
        "topic": pl.String(),
    },
    "paragraphs": {
        "doc_id": pl.String(),
        "para_idx": pl.Int32(),
        "start": pl.Int64(),
        "end": pl.Int64(),
    },
    "sections": {
        "doc_id": pl.String(),
        "section_idx": pl.Int32(),
        "title": pl.String(),
        "level": pl.Int8(),
        "para_start": pl.Int32(),
        "para_end": pl.Int32(),
        "start": pl.Int64(),
        "end": pl.Int64(),
        "path": pl.List(pl.String()),
    },
    "queries": {
        "qid": pl.String(),
        "doc_id": pl.String(),
        "text": pl.String(),
        "qtype": pl.String(),
    },
    "qrels": {
        "qid": pl.String(),
        "doc_id": pl.String(),
        "start": pl.Int64(),
        "end": pl.Int64(),
    },
    "chunks": {
        "chunk_id": pl.String(),
        "doc_id": pl.String(),
        "start": pl.Int64(),
        "end": pl.Int64(),
        "section_idx": pl.Int32(),
        "top_section": pl.Int32(),
        "prefix": pl.String(),
        "content_tokens": pl.Int32(),
        "prefix_tokens": pl.Int32(),
    },
    "runs": {
        "qid": pl.String(),
        "rank": pl.Int32(),
        "chunk_id": pl.String(),
        "score": pl.Float32(),
        "stage": pl.String(),
    },
}


class TableError(StructablateError, ValueError):
    """A table does not satisfy its column contract."""


def empty(table: str) -> pl.DataFrame:
    """An empty frame with the contract's columns."""
    return pl.DataFrame(schema=SCHEMAS[table])


def frame(table: str, rows: dict[str, list] | list[dict]) -> pl.DataFrame:
    """Build a frame of ``table`` from column lists or row dicts, cast to the contract dtypes."""
    schema = SCHEMAS[table]
    if isinstance(rows, list):
        if not rows:
            return empty(table)
        df = pl.DataFrame(rows, schema_overrides=schema, infer_schema_length=None)
    else:
        df = pl.DataFrame(rows, schema_overrides=schema)
    extra = [c for c in df.columns if c not in schema]
    return df.select([pl.col(c).cast(t) for c, t in schema.items()] + extra)


def check_table(df: pl.DataFrame, table: str, source: str = "<frame>") -> pl.DataFrame:
    """Check ``df`` against the ``table`` contract; return it with contract columns first.

    Raises :class:`TableError` naming ``source`` and the offending column.
    """
    schema = SCHEMAS[table]
    for col, dtype in schema.items():
        if col not in df.columns:
            raise TableError(f"{source}: {table} table lacks column '{col}'")
        if df.schema[col] != dtype:
            try:
                df = df.with_columns(pl.col(col).cast(dtype, strict=True))
            except Exception as exc:
                raise TableError(
                    f"{source}: column '{col}' of the {table} table has dtype "
                    f"{df.schema[col]}, expected {dtype}"
                ) from exc
        nulls = df[col].null_count()
        if nulls and col not in ("topic", "prefix"):
            raise TableError(f"{source}: column '{col}' of the {table} table has {nulls} nulls")
    if "start" in schema and "end" in schema and df.height:
        bad = df.filter(pl.col("start") >= pl.col("end"))
        if bad.height:
            raise TableError(
                f"{source}: {bad.height} rows of the {table} table have start >= end "
                f"(first: {bad.row(0, named=True)})"
            )
    extra = [c for c in df.columns if c not in schema]
    return df.select(list(schema) + extra)


def span_identity(spans: pl.DataFrame, gold: pl.DataFrame) -> float:
    """Share of ``spans``' rows whose ``(doc_id, start, end)`` (character offsets, half-open)
    is also a row of ``gold``; NaN for an empty table. Serves sections and chunks alike
    (prefixes are ignored); a span of a document ``gold`` lacks counts as different."""
    if not spans.height:
        return float("nan")
    keys = ["doc_id", "start", "end"]
    same = spans.select(keys).join(gold.select(keys).unique(), on=keys, how="semi")
    return same.height / spans.height
