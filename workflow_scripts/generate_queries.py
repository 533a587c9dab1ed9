"""Glue: documents + paragraphs + gold sections -> synthetic queries, qrels, funnel, and every
candidate with its generations, filter values and status (docs/queries.md)."""

from pathlib import Path

from structablate.corpus.result import check_generated_questions
from structablate.io import read_parquet, write_json, write_parquet
from structablate.llm.client import client_from_config
from structablate.plan.jobs import GenerateQueriesJob
from structablate.queries import generate_queries_from_frames
from structablate.tables import check_table
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, GenerateQueriesJob)
    cfg = settings.queries
    documents = check_table(read_parquet(smk.input.documents), "documents", smk.input.documents)
    paragraphs = check_table(read_parquet(smk.input.paragraphs), "paragraphs",
                             smk.input.paragraphs)
    sections = check_table(read_parquet(smk.input.sections), "sections", smk.input.sections)
    client = client_from_config(settings.llm, base_dir=Path.cwd(),
                                stage=f"queries/{smk.wildcards.corpus}")
    try:
        res = generate_queries_from_frames(documents, paragraphs, sections, client, cfg)
    finally:
        client.close()
    res.funnel["corpus"] = smk.wildcards.corpus
    res.funnel["llm_mode"] = client.mode
    log.info("funnel: %s; finals per type: %s", res.funnel["funnel"],
             {t: v["finals"] for t, v in res.funnel["per_type"].items()})
    # no question kept: stop here with the funnel, before anything is written
    check_generated_questions(res.queries.height, res.funnel, smk.wildcards.corpus)
    write_parquet(res.queries, smk.output.queries)
    write_parquet(res.qrels, smk.output.qrels)
    write_json(res.funnel, smk.output.funnel)
    write_parquet(res.candidates, smk.output.candidates)


main(snakemake)  # noqa: F821
