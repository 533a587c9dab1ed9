"""Glue: a user corpus's questions file + its built documents (tables and build report) ->
queries, qrels and the question funnel."""

import json
from pathlib import Path

from structablate.corpus.byo import map_user_questions
from structablate.corpus.flatten import documents_from_frames
from structablate.corpus.result import write_questions
from structablate.io import read_parquet
from structablate.plan.jobs import MapUserQuestionsJob
from structablate.workflow import setup


def main(smk):
    _, settings = setup(smk, MapUserQuestionsJob)
    inp = smk.input
    docs = documents_from_frames(read_parquet(inp.documents), read_parquet(inp.paragraphs),
                                 read_parquet(inp.sections))
    report = json.loads(Path(inp.report).read_text(encoding="utf-8"))
    build = map_user_questions(settings.corpus, docs, report)
    write_questions(build, smk.wildcards.corpus, smk.output)


main(snakemake)  # noqa: F821
