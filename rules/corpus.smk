# Corpus construction: flat documents, paragraph table, gold sections, questions and qrels.
# Which corpora each rule builds comes from the facts of their kind (settings.CORPUS_SOURCES:
# build_rule, questions_rule; built_by and questions_mapped_by in common.smk), never from the
# kind's name.


rule build_qasper:
    input:
        sources=qasper_files,
    output:
        **CORPUS_TABLES,
        **QUESTIONS,
        funnel=P.funnel(W["corpus"]),
    params:
        settings=trigger("build_qasper"),
    wildcard_constraints:
        corpus=built_by("build_qasper"),
    threads: threads_of("build_qasper")
    resources:
        **resources_of("build_qasper"),
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/build_qasper"),
    benchmark:
        P.benchmark("{corpus}/build_qasper"),
    script:
        glue("build_qasper")


rule build_wikipedia:
    input:
        export=wikipedia_export,
    output:
        **CORPUS_TABLES,
        report=P.corpus_report(W["corpus"]),
    params:
        settings=trigger("build_wikipedia"),
        cache_dir=P.wikipedia_pages(W["corpus"]),
    wildcard_constraints:
        corpus=built_by("build_wikipedia"),
    # from the MediaWiki API on the submit host (network-bound and light); an XML export
    # (possibly a full dump) is parsed on a node
    localrule: localrule_of("build_wikipedia")
    threads: threads_of("build_wikipedia")
    resources:
        **resources_of("build_wikipedia"),
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/build_wikipedia"),
    benchmark:
        P.benchmark("{corpus}/build_wikipedia"),
    script:
        glue("build_wikipedia")


rule build_user_documents:
    input:
        user_document_files,
    output:
        **CORPUS_TABLES,
        report=P.corpus_report(W["corpus"]),
    params:
        settings=trigger("build_user_documents"),
    wildcard_constraints:
        corpus=built_by("build_user_documents"),
    threads: threads_of("build_user_documents")
    resources:
        **resources_of("build_user_documents"),
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/build_user_documents"),
    benchmark:
        P.benchmark("{corpus}/build_user_documents"),
    script:
        glue("build_user_documents")


# A user's questions file is mapped apart from the documents: editing a question reruns this
# job and what reads questions, never the tokens, chunks or vectors of unchanged documents.
rule map_user_questions:
    input:
        **CORPUS_TABLES,
        report=P.corpus_report(W["corpus"]),
        questions=user_questions_file,
    output:
        **QUESTIONS,
        funnel=P.funnel(W["corpus"]),
    params:
        settings=trigger("map_user_questions"),
    wildcard_constraints:
        corpus=questions_mapped_by("map_user_questions"),
    threads: threads_of("map_user_questions")
    resources:
        **resources_of("map_user_questions"),
    group: group_of("map_user_questions")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/map_user_questions"),
    benchmark:
        P.benchmark("{corpus}/map_user_questions"),
    script:
        glue("map_user_questions")


rule generate_queries:
    input:
        **CORPUS_TABLES,
        recorded=recorded_questions,
    output:
        **QUESTIONS,
        funnel=P.funnel(W["corpus"]),
        candidates=P.query_candidates(W["corpus"]),
    params:
        settings=trigger("generate_queries"),
    wildcard_constraints:
        # Wikipedia corpora, and user corpora that bring no questions of their own
        corpus=_alternatives(corpora_where(PLAN.generates_queries)),
    # vLLM writes the questions on one GPU; replaying recorded generations (or an OpenAI-style
    # server, or llama.cpp on CPUs) needs none. Per corpus: each may lay its own llm block.
    threads: threads_of("generate_queries")
    resources:
        **resources_of("generate_queries"),
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/generate_queries"),
    benchmark:
        P.benchmark("{corpus}/generate_queries"),
    script:
        glue("generate_queries")


rule bm25_check:
    input:
        chunks=P.chunks(W["corpus"], PLAN.bm25_chunkset),
        documents=P.documents(W["corpus"]),
        **QUESTIONS,
    output:
        json=P.bm25(W["corpus"]),
        per_query=P.bm25_per_query(W["corpus"]),
    params:
        settings=trigger("bm25_check"),
    threads: threads_of("bm25_check")
    resources:
        **resources_of("bm25_check"),
    group: group_of("bm25_check")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/bm25_check"),
    benchmark:
        P.benchmark("{corpus}/bm25_check"),
    script:
        glue("bm25_check")
