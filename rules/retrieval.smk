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
