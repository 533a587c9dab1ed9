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
    threads: 8
    resources:
        # one GPU for an embedder on a cuda device (a CPU embedder runs longer)
        gpu=lambda w: int(PLAN.settings.embedders[w.embedder].device.startswith("cuda")),
        mem_mb=scaled(32000),
        runtime=scaled(
            lambda w: 30 if PLAN.settings.embedders[w.embedder].device.startswith("cuda") else 480),
    # SLURM group by corpus and the stages upstream, none on a CPU device (structablate.slurm)
    group: lambda w: gpu_group(workflow, PLAN, "embed", "embed_chunks", w)
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
    threads: 8
    resources:
        # one GPU for an embedder on a cuda device (a CPU embedder runs longer)
        gpu=lambda w: int(PLAN.settings.embedders[w.embedder].device.startswith("cuda")),
        mem_mb=scaled(16000),
        runtime=scaled(
            lambda w: 15 if PLAN.settings.embedders[w.embedder].device.startswith("cuda") else 480),
    # SLURM group by corpus and the stages upstream, none on a CPU device (structablate.slurm)
    group: lambda w: gpu_group(workflow, PLAN, "embed", "embed_queries", w)
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/{embedder}/embed_queries"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/embed_queries"),
    script:
        glue("embed")
