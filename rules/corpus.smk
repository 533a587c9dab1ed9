# Corpus construction: flat documents, paragraph table, gold sections, queries and qrels.

from structablate.corpus.byo import input_files as byo_input_files


rule build_qasper:
    message:
        "QASPER corpus {wildcards.corpus}: flatten, verify, map evidence"
    input:
        sources=lambda w: [s["path"] for s in config["corpora"][w.corpus]["sources"]
                           if Path(s["path"]).exists()],
    output:
        documents=f"{R}/{{corpus}}/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/paragraphs.parquet",
        sections=f"{R}/{{corpus}}/sections_gold.parquet",
        queries=f"{R}/{{corpus}}/queries.parquet",
        qrels=f"{R}/{{corpus}}/qrels.parquet",
        funnel=report(
            f"{R}/{{corpus}}/funnel.json",
            category="Corpora",
            subcategory="{corpus}",
            caption="../resources/report/funnel.rst",
        ),
    params:
        sources=lambda w: config["corpora"][w.corpus]["sources"],
        fuzzy_min_ratio=lambda w: config["corpora"][w.corpus]["fuzzy_min_ratio"],
        keep_papers=lambda w: config["corpora"][w.corpus]["keep_papers_without_questions"],
    wildcard_constraints:
        corpus=_alternatives(corpora_of_type("qasper")),
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/build_qasper.log",
    localrule: True
    script:
        "../workflow_scripts/build_qasper.py"


rule build_wikipedia:
    message:
        "Wikipedia corpus {wildcards.corpus}: fetch or read, normalise, verify, select"
    output:
        documents=f"{R}/{{corpus}}/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/paragraphs.parquet",
        sections=f"{R}/{{corpus}}/sections_gold.parquet",
        report=report(
            f"{R}/{{corpus}}/corpus_report.json",
            category="Corpora",
            subcategory="{corpus}",
            caption="../resources/report/wikipedia_corpus.rst",
        ),
    params:
        source=lambda w: config["corpora"][w.corpus]["source"],
        selection=lambda w: config["corpora"][w.corpus].get("selection", {}),
        cache_dir=lambda w: f"{R}/cache/wikipedia/{w.corpus}",
    wildcard_constraints:
        corpus=_alternatives(corpora_of_type("wikipedia")),
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/build_wikipedia.log",
    script:
        "../workflow_scripts/build_wikipedia.py"


rule build_byo:
    message:
        "bring-your-own corpus {wildcards.corpus}: parse, verify, map user queries"
    input:
        lambda w: byo_input_files(config["corpora"][w.corpus]),
    output:
        documents=f"{R}/{{corpus}}/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/paragraphs.parquet",
        sections=f"{R}/{{corpus}}/sections_gold.parquet",
        queries=f"{R}/{{corpus}}/queries.parquet",
        qrels=f"{R}/{{corpus}}/qrels.parquet",
        funnel=report(
            f"{R}/{{corpus}}/funnel.json",
            category="Corpora",
            subcategory="{corpus}",
            caption="../resources/report/byo_corpus.rst",
        ),
    params:
        corpus=lambda w: config["corpora"][w.corpus],
    wildcard_constraints:
        corpus=_alternatives(byo_corpora(with_queries=True)),
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/build_byo.log",
    localrule: True
    script:
        "../workflow_scripts/build_byo.py"


rule build_byo_documents:
    message:
        "bring-your-own corpus {wildcards.corpus} without user queries: parse and verify"
    input:
        lambda w: byo_input_files(config["corpora"][w.corpus]),
    output:
        documents=f"{R}/{{corpus}}/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/paragraphs.parquet",
        sections=f"{R}/{{corpus}}/sections_gold.parquet",
        report=f"{R}/{{corpus}}/corpus_report.json",
    params:
        corpus=lambda w: config["corpora"][w.corpus],
    wildcard_constraints:
        corpus=_alternatives(byo_corpora(with_queries=False)),
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/build_byo.log",
    localrule: True
    script:
        "../workflow_scripts/build_byo.py"


rule generate_queries:
    message:
        "synthetic queries for {wildcards.corpus}: pipeline-chosen spans, LLM writing, leakage "
        "filter, paraphrase, balancing"
    input:
        documents=f"{R}/{{corpus}}/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/paragraphs.parquet",
        sections=f"{R}/{{corpus}}/sections_gold.parquet",
    output:
        queries=f"{R}/{{corpus}}/queries.parquet",
        qrels=f"{R}/{{corpus}}/qrels.parquet",
        funnel=report(
            f"{R}/{{corpus}}/funnel.json",
            category="Corpora",
            subcategory="{corpus}",
            caption="../resources/report/query_funnel.rst",
        ),
        candidates=f"{R}/{{corpus}}/query_candidates.parquet",
    params:
        llm=llm_params("queries"),
        queries=query_generation_params,
    wildcard_constraints:
        # Wikipedia corpora, and user corpora that bring no questions of their own
        corpus=_alternatives(query_generating_corpora()),
    threads: 2
    resources:
        gpu=1,
    conda:
        "../envs/gpu.yaml"
    log:
        "logs/{corpus}/generate_queries.log",
    script:
        "../workflow_scripts/generate_queries.py"


rule bm25_check:
    message:
        "BM25 gold-top-1 and evidence ROUGE-L of {wildcards.corpus} (non-lexicality check)"
    input:
        chunks=f"{R}/{{corpus}}/chunks/G2.parquet",
        documents=f"{R}/{{corpus}}/documents.parquet",
        queries=f"{R}/{{corpus}}/queries.parquet",
        qrels=f"{R}/{{corpus}}/qrels.parquet",
    output:
        json=f"{R}/{{corpus}}/bm25.json",
        per_query=f"{R}/{{corpus}}/bm25_per_query.parquet",
    params:
        chunkset="G2",
        include_prefix=False,
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/bm25_check.log",
    localrule: True
    script:
        "../workflow_scripts/bm25_check.py"
