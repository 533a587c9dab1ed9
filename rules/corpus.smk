# Corpus construction: flat documents, paragraph table, gold sections, questions and qrels.

rule build_qasper:
    input:
        sources=lambda w: [s.path for s in PLAN.settings.corpora[w.corpus].sources
                           if s.format == "v0.3"],
    output:
        **CORPUS_TABLES,
        **QUESTIONS,
        funnel=P.funnel(W["corpus"]),
    params:
        settings=trigger("build_qasper"),
    wildcard_constraints:
        corpus=_alternatives(corpora_where(lambda c: PLAN.corpus_kind(c) == "qasper")),
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/build_qasper"),
    script:
        glue("build_qasper")


rule build_wikipedia:
    input:
        export=lambda w: [PLAN.settings.corpora[w.corpus].source.path]
        if PLAN.settings.corpora[w.corpus].source.mode == "xml" else [],
    output:
        **CORPUS_TABLES,
        report=P.corpus_report(W["corpus"]),
    params:
        settings=trigger("build_wikipedia"),
        cache_dir=P.wikipedia_pages(W["corpus"]),
    wildcard_constraints:
        corpus=_alternatives(corpora_where(lambda c: PLAN.corpus_kind(c) == "wikipedia")),
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/build_wikipedia"),
    script:
        glue("build_wikipedia")


rule build_user:
    input:
        user_files,
    output:
        **CORPUS_TABLES,
        **QUESTIONS,
        funnel=P.funnel(W["corpus"]),
    params:
        settings=trigger("build_user"),
    wildcard_constraints:
        corpus=_alternatives(corpora_where(lambda c: PLAN.corpus_kind(c) == "user"
                                           and not PLAN.generates_queries(c))),
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/build_user"),
    script:
        glue("build_user")


rule build_user_documents:
    input:
        user_files,
    output:
        **CORPUS_TABLES,
        report=P.corpus_report(W["corpus"]),
    params:
        settings=trigger("build_user_documents", "build_user"),
    wildcard_constraints:
        corpus=_alternatives(corpora_where(lambda c: PLAN.corpus_kind(c) == "user"
                                           and PLAN.generates_queries(c))),
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/build_user"),
    script:
        glue("build_user")


rule generate_queries:
    input:
        **CORPUS_TABLES,
        recorded=lambda w: PLAN.recorded_generations("queries", w.corpus),
    output:
        **QUESTIONS,
        funnel=P.funnel(W["corpus"]),
        candidates=P.query_candidates(W["corpus"]),
    params:
        settings=trigger("generate_queries"),
    wildcard_constraints:
        # Wikipedia corpora, and user corpora that bring no questions of their own
        corpus=_alternatives(corpora_where(PLAN.generates_queries)),
    threads: 2
    resources:
        gpu=lambda w: int(PLAN.stage_llm("queries", w.corpus).mode != "replay"),
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/generate_queries"),
    script:
        glue("generate_queries")


rule bm25_check:
    input:
        chunks=P.chunks(W["corpus"], "G2"),
        documents=P.documents(W["corpus"]),
        **QUESTIONS,
    output:
        json=P.bm25(W["corpus"]),
        per_query=P.bm25_per_query(W["corpus"]),
    params:
        settings=trigger("bm25_check"),
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/bm25_check"),
    script:
        glue("bm25_check")
