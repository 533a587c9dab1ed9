"""Glue: documents + paragraphs -> the corpus token table every chunk job reads (each document
tokenized once per corpus and tokenizer)."""

from structablate.chunking.tokens import TokenCounter, tokenize_corpus, write_corpus_tokens
from structablate.io import read_parquet
from structablate.plan.jobs import TokenizeCorpusJob
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, TokenizeCorpusJob)
    documents = read_parquet(smk.input.documents)
    tokens = tokenize_corpus(documents, TokenCounter.from_model(settings.tokenizer),
                             paragraphs=read_parquet(smk.input.paragraphs))
    log.info("tokenized %d documents", documents.height)
    write_corpus_tokens(tokens, smk.output.tokens)


main(snakemake)  # noqa: F821
