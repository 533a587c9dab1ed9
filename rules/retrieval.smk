# Retrieval: top-k chunks per question for every condition (flat or two-stage), and the
# optional cross-encoder reranking. qrels feed only the two-stage section-recall diagnostic,
# never the ranking.


rule retrieve:
    input:
        chunks=lambda w: P.chunks(w.corpus, chunkset_of(w)),
        vectors=lambda w: P.vectors(w.corpus, w.embedder, chunkset_of(w)),
        queries=P.queries(W["corpus"]),
        query_vectors=P.vectors(W["corpus"], W["embedder"], "queries"),
        qrels=P.qrels(W["corpus"]),
    output:
        run=P.run(W["corpus"], W["embedder"], "none", W["condition"]),
        report=P.run_report(W["corpus"], W["embedder"], W["condition"]),
    params:
        settings=trigger("retrieve"),
    threads: SIZE.threads_of(PLAN, "retrieve")
    resources:
        **SIZE.resources_of(PLAN, "retrieve"),
    group: lambda w: cpu_group(workflow, PLAN, "retrieve", w)
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
        chunks=lambda w: P.chunks(w.corpus, chunkset_of(w)),
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
    threads: SIZE.threads_of(PLAN, "rerank")
    resources:
        **SIZE.resources_of(PLAN, "rerank"),
    group: lambda w: gpu_group(workflow, PLAN, "rerank", "rerank", w)
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/rerank_{condition}"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/rerank_{condition}"),
    script:
        glue("rerank")
