# Embedding: chunk and question vectors per embedder, through the content-addressed cache
# ({results}/cache/embeddings), so a text shared by several chunksets is embedded once.


rule embed_chunks:
    input:
        chunks=P.chunks(W["corpus"], W["chunkset"]),
        documents=P.documents(W["corpus"]),
    output:
        vectors=P.vectors(W["corpus"], W["embedder"], W["chunkset"]),
        stats=P.vector_stats(W["corpus"], W["embedder"], W["chunkset"]),
    params:
        settings=trigger("embed_chunks", "embed"),
        cache=P.cache("embeddings"),
    threads: SIZE.threads_of(PLAN, "embed_chunks")
    resources:
        **SIZE.resources_of(PLAN, "embed_chunks"),
    # SLURM group: on a GPU by corpus and the stages upstream; on a CPU with its cell's
    # retrieval (structablate.slurm)
    group: lambda w: embed_group(workflow, PLAN, "embed_chunks", w)
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/{embedder}/embed_{chunkset}"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/embed_{chunkset}"),
    script:
        glue("embed")


rule embed_queries:
    input:
        queries=P.queries(W["corpus"]),
    output:
        vectors=P.vectors(W["corpus"], W["embedder"], "queries"),
        stats=P.vector_stats(W["corpus"], W["embedder"], "queries"),
    params:
        settings=trigger("embed_queries", "embed"),
        cache=P.cache("embeddings"),
    threads: SIZE.threads_of(PLAN, "embed_queries")
    resources:
        **SIZE.resources_of(PLAN, "embed_queries"),
    # SLURM group: on a GPU by corpus and the stages upstream; on a CPU with its cell's
    # retrieval (structablate.slurm)
    group: lambda w: embed_group(workflow, PLAN, "embed_queries", w)
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/{embedder}/embed_queries"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/embed_queries"),
    script:
        glue("embed")
