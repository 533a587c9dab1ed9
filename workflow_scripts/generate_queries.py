"""Glue: documents + paragraphs + gold sections -> synthetic queries, qrels, funnel.

params: ``llm`` (the llm config block; the bundled default replays a recorded JSONL cache),
``queries`` (``corpora.<name>.queries``, see docs/queries.md). input: ``documents``,
``paragraphs``, ``sections``. output: ``queries``, ``qrels``, ``funnel``; optional
``candidates`` (every candidate with its generations, filter values and status).
"""

from pathlib import Path

from structablate.io import read_parquet, write_json, write_parquet
from structablate.llm.client import client_from_config
from structablate.queries import QueryGenConfig, generate_queries_from_frames
from structablate.tables import check_table
from structablate.workflow import setup

log = setup(snakemake)  # noqa: F821
smk = snakemake  # noqa: F821
cfg = QueryGenConfig.from_dict(getattr(smk.params, "queries", None) or {})
documents = check_table(read_parquet(smk.input.documents), "documents", smk.input.documents)
paragraphs = check_table(read_parquet(smk.input.paragraphs), "paragraphs", smk.input.paragraphs)
sections = check_table(read_parquet(smk.input.sections), "sections", smk.input.sections)
client = client_from_config(smk.params.llm, base_dir=Path.cwd())
try:
    res = generate_queries_from_frames(documents, paragraphs, sections, client, cfg)
finally:
    client.close()
res.funnel["corpus"] = getattr(smk.wildcards, "corpus", None)
res.funnel["llm_mode"] = client.mode
log.info("funnel: %s; finals per type: %s", res.funnel["funnel"],
         {t: v["finals"] for t, v in res.funnel["per_type"].items()})
write_parquet(res.queries, smk.output.queries)
write_parquet(res.qrels, smk.output.qrels)
write_json(res.funnel, smk.output.funnel)
if getattr(smk.output, "candidates", None):
    write_parquet(res.candidates, smk.output.candidates)
