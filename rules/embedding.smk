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
        settings=trigger("embed_chunks"),
        cache=P.cache("embeddings"),
    threads: threads_of("embed_chunks")
    resources:
        **resources_of("embed_chunks"),
    # SLURM group: on a GPU by corpus and the stages upstream; on a CPU with its cell's
    # retrieval (structablate.plan.groups)
    group: group_of("embed_chunks")
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
        settings=trigger("embed_queries"),
        cache=P.cache("embeddings"),
    threads: threads_of("embed_queries")
    resources:
        **resources_of("embed_queries"),
    # SLURM group: on a GPU by corpus and the stages upstream; on a CPU with its cell's
    # retrieval (structablate.plan.groups)
    group: group_of("embed_queries")
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/{embedder}/embed_queries"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/embed_queries"),
    script:
        glue("embed")
