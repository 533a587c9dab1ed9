# Retrieval: top-k chunks per query for every condition (flat or two-stage), no reranker.
# qrels feed only the two-stage section-recall diagnostic, never the ranking.


rule retrieve:
    message:
        "retrieve {wildcards.corpus}/{wildcards.embedder}/{wildcards.condition}"
    input:
        chunks=lambda w: f"{R}/{w.corpus}/chunks/{chunkset_of(w)}.parquet",
        vectors=lambda w: f"{R}/{w.corpus}/{w.embedder}/embeddings/{chunkset_of(w)}.npy",
        queries=f"{R}/{{corpus}}/queries.parquet",
        query_vectors=f"{R}/{{corpus}}/{{embedder}}/embeddings/queries.npy",
        qrels=f"{R}/{{corpus}}/qrels.parquet",
    output:
        run=f"{R}/{{corpus}}/{{embedder}}/none/runs/{{condition}}.parquet",
    params:
        retrieval=retrieval_params,
        condition=lambda w: w.condition,
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/{embedder}/retrieve_{condition}.log",
    script:
        "../workflow_scripts/retrieve.py"


rule rerank:
    message:
        "rerank {wildcards.corpus}/{wildcards.embedder}/{wildcards.condition} with "
        "{wildcards.reranker}"
    input:
        run=f"{R}/{{corpus}}/{{embedder}}/none/runs/{{condition}}.parquet",
        chunks=lambda w: f"{R}/{w.corpus}/chunks/{chunkset_of(w)}.parquet",
        documents=f"{R}/{{corpus}}/documents.parquet",
        queries=f"{R}/{{corpus}}/queries.parquet",
    output:
        run=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/runs/{{condition}}.parquet",
    params:
        reranker=lambda w: config["rerankers"][w.reranker],
        seed=config["seed"],
    wildcard_constraints:
        reranker=_alternatives([r for r in RERANKERS if r != "none"]),
    threads: 2
    resources:
        gpu=1,
    conda:
        "../envs/gpu.yaml"
    log:
        "logs/{corpus}/{embedder}/{reranker}/rerank_{condition}.log",
    script:
        "../workflow_scripts/rerank.py"
