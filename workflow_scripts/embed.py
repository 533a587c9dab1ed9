"""Glue: chunk or question texts -> vectors (.npy) and embedding statistics (.json)."""

from structablate.chunking.build import chunk_texts
from structablate.embedding import Embedder, EmbeddingCache, embed_texts
from structablate.io import read_parquet, write_json, write_npy
from structablate.plan.jobs import EmbedJob
from structablate.workflow import setup


def main(smk):
    log, settings = setup(smk, EmbedJob)
    cfg = settings.embedder
    if "queries" in smk.input.keys():
        texts = [cfg.query_instruction + t for t in read_parquet(smk.input.queries)["text"]]
    else:
        texts = chunk_texts(read_parquet(smk.input.chunks), read_parquet(smk.input.documents))
    cache = EmbeddingCache(smk.params.cache)
    embedder = Embedder(cfg)
    if embedder.dtype != settings.precision:  # the trigger recorded another precision
        raise RuntimeError(f"embedder {cfg.model!r} resolved dtype {embedder.dtype!r}, the plan "
                           f"said {settings.precision!r}")
    vectors, stats = embed_texts(texts, embedder, cache, desc=smk.rule)
    cache.close()
    log.info("embedded %s", stats.as_dict())
    write_npy(vectors, smk.output.vectors)
    write_json({"model": cfg.model, "dtype": embedder.dtype, "backend": cfg.backend,
                "signature": embedder.signature, **stats.as_dict()}, smk.output.stats)


main(snakemake)  # noqa: F821
