# Retrieval: top-k chunks per question for every condition (flat or two-stage), and the
# optional cross-encoder reranking. qrels feed only the two-stage section-recall diagnostic,
# never the ranking.


rule retrieve:
    input:
        chunks=condition_chunks,
        vectors=condition_vectors,
        queries=P.queries(W["corpus"]),
        query_vectors=P.vectors(W["corpus"], W["embedder"], "queries"),
        qrels=P.qrels(W["corpus"]),
    output:
        run=P.run(W["corpus"], W["embedder"], "none", W["condition"]),
        report=P.run_report(W["corpus"], W["embedder"], W["condition"]),
    params:
        settings=trigger("retrieve"),
    threads: threads_of("retrieve")
    resources:
        **resources_of("retrieve"),
    group: group_of("retrieve")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/{embedder}/retrieve_{condition}"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/retrieve_{condition}"),
    script:
        glue("retrieve")


rule rerank:
    input:
        run=P.run(W["corpus"], W["embedder"], "none", W["condition"]),
        chunks=condition_chunks,
        documents=P.documents(W["corpus"]),
        queries=P.queries(W["corpus"]),
    output:
        run=P.run(W["corpus"], W["embedder"], W["reranker"], W["condition"]),
        report=P.rerank_report(W["corpus"], W["embedder"], W["reranker"], W["condition"]),
    params:
        settings=trigger("rerank"),
        cache=P.cache("rerank_scores"),
    wildcard_constraints:
        reranker=_alternatives([r for r in PLAN.rerankers if r != "none"]),
    threads: threads_of("rerank")
    resources:
        **resources_of("rerank"),
    group: group_of("rerank")
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/rerank_{condition}"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/rerank_{condition}"),
    script:
        glue("rerank")
