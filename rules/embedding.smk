# Embedding: chunk and query vectors per embedder, through the content-addressed cache
# (results/cache/embeddings.sqlite), so a text shared by several chunksets is embedded once.


rule embed_chunks:
    message:
        "embed {wildcards.corpus}/{wildcards.chunkset} with {wildcards.embedder}"
    input:
        chunks=f"{R}/{{corpus}}/chunks/{{chunkset}}.parquet",
        documents=f"{R}/{{corpus}}/documents.parquet",
    output:
        vectors=f"{R}/{{corpus}}/{{embedder}}/embeddings/{{chunkset}}.npy",
        stats=f"{R}/{{corpus}}/{{embedder}}/embeddings/{{chunkset}}.json",
    params:
        embedder=lambda w: config["embedders"][w.embedder],
        cache=f"{R}/cache/embeddings.sqlite",
    threads: 2
    resources:
        gpu=1,
    conda:
        "../envs/gpu.yaml"
    log:
        "logs/{corpus}/{embedder}/embed_{chunkset}.log",
    script:
        "../workflow_scripts/embed.py"


rule embed_queries:
    message:
        "embed queries of {wildcards.corpus} with {wildcards.embedder}"
    input:
        queries=f"{R}/{{corpus}}/queries.parquet",
    output:
        vectors=f"{R}/{{corpus}}/{{embedder}}/embeddings/queries.npy",
        stats=f"{R}/{{corpus}}/{{embedder}}/embeddings/queries.json",
    params:
        embedder=lambda w: config["embedders"][w.embedder],
        cache=f"{R}/cache/embeddings.sqlite",
    threads: 2
    resources:
        gpu=1,
    conda:
        "../envs/gpu.yaml"
    log:
        "logs/{corpus}/{embedder}/embed_queries.log",
    script:
        "../workflow_scripts/embed.py"
