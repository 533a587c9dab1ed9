# Evaluation: per-question scores for every cell and condition, per-cell summaries, contrasts
# and descriptive statistics, TREC exports.

rule score:
    input:
        runs=cell_inputs(P.run),
        chunks=cell_inputs(condition_chunks_of),
        queries=P.queries(W["corpus"]),
        qrels=P.qrels(W["corpus"]),
    output:
        scores=[P.scores(*CELL, cond) for cond in PLAN.conditions],
    params:
        settings=trigger("score"),
    threads: threads_of("score")
    resources:
        **resources_of("score"),
    group: group_of("score")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/score"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/score"),
    script:
        glue("score")


rule summarize_cell:
    input:
        scores=cell_inputs(P.scores),
    output:
        summary=P.cell_table(*CELL, "summary"),  # in --report: report_cell's HTML table
    params:
        settings=trigger("summarize_cell"),
    localrule: localrule_of("summarize_cell")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/summarize"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/summarize"),
    script:
        glue("summarize_cell")


rule summary_markdown:
    input:
        summaries=[P.cell_table(c.corpus, c.embedder, c.reranker, "summary")
                   for c in PLAN.cells()],
        contrasts=[P.report_cell(c.corpus, c.embedder, c.reranker, "contrasts_marked.parquet")
                   for c in PLAN.cells()],
    output:
        markdown=P.summary_markdown(),
    params:
        settings=trigger("summary_markdown"),
    localrule: localrule_of("summary_markdown")
    conda:
        "../envs/cpu.yaml"
    log:
        log("summary_markdown"),
    benchmark:
        P.benchmark("summary_markdown"),
    script:
        glue("summary_markdown")


rule contrasts:
    input:
        scores=cell_inputs(P.scores),
    output:
        contrasts=P.cell_table(*CELL, "contrasts"),  # in --report: report_cell's HTML
        contrasts_qtype=P.cell_table(*CELL, "contrasts_qtype"),
        dose_response=P.cell_table(*CELL, "dose_response"),
    params:
        settings=trigger("contrasts"),
    threads: threads_of("contrasts")
    resources:
        **resources_of("contrasts"),
    group: group_of("contrasts")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/contrasts"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/contrasts"),
    script:
        glue("contrasts")


rule cell_statistics:
    input:
        scores=cell_inputs(P.scores),
        runs=cell_inputs(P.run),
        chunks=cell_inputs(condition_chunks_of),
        queries=P.queries(W["corpus"]),
    output:
        condition_cis=P.condition_cis(*CELL),
        section_recall=P.section_recall(*CELL),
        ranking_identity=P.ranking_identity(*CELL),
    params:
        settings=trigger("cell_statistics"),
    threads: threads_of("cell_statistics")
    resources:
        **resources_of("cell_statistics"),
    group: group_of("cell_statistics")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/cell_statistics"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/cell_statistics"),
    script:
        glue("cell_statistics")


rule trec_export:
    input:
        run=P.run(*CELL, W["condition"]),
        chunks=condition_chunks,
        qrels=P.qrels(W["corpus"]),
    output:
        run=P.trec_run(*CELL, W["condition"]),
        qrels=P.trec_qrels(*CELL, W["condition"]),
    params:
        settings=trigger("trec_export"),
    threads: threads_of("trec_export")
    resources:
        **resources_of("trec_export"),
    group: group_of("trec_export")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/trec_{condition}"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/trec_{condition}"),
    script:
        glue("trec_export")
