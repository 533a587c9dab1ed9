# Report: tables and figures per cell and per corpus, and the summary page
# {results}/report/index.{md,html}. Outputs flagged report() make up `snakemake --report`: one
# category per corpus (subcategory "corpus" for its verdict, funnel, forest plot and size
# matching; "<embedder> / <reranker>" for a cell's tables and figures) and "Overview" (the
# provenance and the paper's two tables). Every item is HTML or an image; the Parquet and JSON
# files they are made from stay plain outputs. Every figure is written as PNG and SVG.
# Logic: src/structablate/report/.

rule structure_quality:
    input:
        paragraphs=P.paragraphs(W["corpus"]),
        gold=P.sections(W["corpus"], "gold"),
        induced=induced_sections,
        chunks=chunkset_chunks,
        chunk_stats=chunkset_stats,
    output:
        quality=P.report_corpus(W["corpus"], "structure_quality.parquet"),
        checks=P.report_corpus(W["corpus"], "comparison_checks.parquet"),
    params:
        settings=trigger("structure_quality"),
    threads: threads_of("structure_quality")
    resources:
        **resources_of("structure_quality"),
    group: group_of("structure_quality")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/structure_quality"),
    benchmark:
        P.benchmark("{corpus}/structure_quality"),
    script:
        glue("structure_quality")


rule report_cell:
    input:
        runs=cell_inputs(P.run),
        summary=P.cell_table(*CELL, "summary"),
        contrasts=P.cell_table(*CELL, "contrasts"),
        dose_response=P.cell_table(*CELL, "dose_response"),
        cis=P.condition_cis(*CELL),
        section_recall=P.section_recall(*CELL),
        ranking_identity=P.ranking_identity(*CELL),
        structure_quality=P.report_corpus(W["corpus"], "structure_quality.parquet"),
        comparison_checks=P.report_corpus(W["corpus"], "comparison_checks.parquet"),
    output:
        marked=P.report_cell(*CELL, "contrasts_marked.parquet"),
        cell=P.report_cell(*CELL, "cell.json"),
        contrasts_table=report_item(P.report_cell(*CELL, "contrasts.html"),
                                    "report_contrasts"),
        means_table=report_item(P.report_cell(*CELL, "condition_means.html"), "report_means"),
        bars=report_item(P.report_cell(*CELL, "condition_bars.png"), "report_bars"),
        dose=report_item(P.report_cell(*CELL, "dose_response.png"), "report_dose"),
        section_recall_fig=report_item(P.report_cell(*CELL, "section_recall.png"),
                                       "report_section_recall"),
        bars_svg=P.report_cell(*CELL, "condition_bars.svg"),
        dose_svg=P.report_cell(*CELL, "dose_response.svg"),
        section_recall_svg=P.report_cell(*CELL, "section_recall.svg"),
    params:
        settings=trigger("report_cell"),
    threads: threads_of("report_cell")
    resources:
        **resources_of("report_cell"),
    group: group_of("report_cell")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/{embedder}/{reranker}/report_cell"),
    benchmark:
        P.benchmark("{corpus}/{embedder}/{reranker}/report_cell"),
    script:
        glue("report_cell")


rule report_corpus:
    input:
        contrasts=corpus_contrasts,
        chunks=chunkset_chunks,
        embed_stats=corpus_vector_stats,
        corpus_report=funnel_of,
    output:
        forest=report_item(P.report_corpus(W["corpus"], "forest.png"), "report_forest",
                           "corpus"),
        size_matching=P.report_corpus(W["corpus"], "size_matching.parquet"),
        size_matching_table=report_item(P.report_corpus(W["corpus"], "size_matching.html"),
                                        "report_size_matching", "corpus"),
        funnel=report_item(P.report_corpus(W["corpus"], "funnel.png"), "report_funnel",
                           "corpus"),
        forest_svg=P.report_corpus(W["corpus"], "forest.svg"),
        funnel_svg=P.report_corpus(W["corpus"], "funnel.svg"),
    params:
        settings=trigger("report_corpus"),
    threads: threads_of("report_corpus")
    resources:
        **resources_of("report_corpus"),
    group: group_of("report_corpus")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/report_corpus"),
    benchmark:
        P.benchmark("{corpus}/report_corpus"),
    script:
        glue("report_corpus")


rule report_page:
    # the files the report's reader opens (structablate.results_paths.page_files, read by
    # structablate.report.folder), so the page's inputs and what its glue reads are one list
    input:
        **page_files(P, [(c.corpus, c.embedder, c.reranker) for c in PLAN.cells()],
                     {c: PLAN.generates_queries(c) for c in PLAN.corpora}, PLAN.contextualized),
    output:
        markdown=P.report_page("index.md"),
        html=P.report_page("index.html"),
        overview=report(P.report_page("overview.html"),
                        caption=f"{CAPTIONS}/report_overview.rst", category="Overview",
                        subcategory="run"),
        verdicts=[report(P.report_page(f"{c}/verdict.html"), category=c, subcategory="corpus",
                         caption=f"{CAPTIONS}/report_verdict.rst") for c in PLAN.corpora],
    params:
        settings=trigger("report_page"),
    localrule: localrule_of("report_page")
    conda:
        "../envs/cpu.yaml"
    log:
        log("report_page"),
    benchmark:
        P.benchmark("report_page"),
    script:
        glue("report_page")
