# Report: tables and figures per cell and per corpus, and the summary page
# results/report/index.{md,html}. Outputs flagged report() make up `snakemake --report`
# (category = corpus, subcategory = cell). Logic: src/structablate/report/.

from structablate.report.grid import cell_paths, corpus_report_file, report_cells

RP = f"{R}/report"
CELL_DIR = f"{RP}/{{corpus}}/{{embedder}}/{{reranker}}"
CELL_IN = f"{R}/{{corpus}}/{{embedder}}/{{reranker}}"
PRIMARY_METRIC = config["statistics"]["primary"]["metric"]
REPORT_CELLS = report_cells(config["corpora"], EMBEDDERS, rerankers_for)
CAPTIONS = "../resources/report"


rule report_cell:
    message:
        "report tables and figures of {wildcards.corpus}/{wildcards.embedder}/"
        "{wildcards.reranker}"
    input:
        scores=lambda w: [f"{R}/{w.corpus}/{w.embedder}/{w.reranker}/scores/{c}.parquet"
                          for c in CONDITIONS],
        runs=lambda w: [f"{R}/{w.corpus}/{w.embedder}/{w.reranker}/runs/{c}.parquet"
                        for c in CONDITIONS],
        summary=f"{CELL_IN}/summary.parquet",
        contrasts=f"{CELL_IN}/contrasts.parquet",
        dose_response=f"{CELL_IN}/dose_response.parquet",
        queries=f"{R}/{{corpus}}/queries.parquet",
    output:
        cis=f"{CELL_DIR}/condition_cis.parquet",
        section_recall=f"{CELL_DIR}/section_recall.parquet",
        cell=f"{CELL_DIR}/cell.json",
        contrasts_table=report(
            f"{CELL_DIR}/contrasts.html",
            caption=f"{CAPTIONS}/report_contrasts.rst",
            category="{corpus}",
            subcategory="{embedder} / {reranker}",
        ),
        means_table=report(
            f"{CELL_DIR}/condition_means.html",
            caption=f"{CAPTIONS}/report_means.rst",
            category="{corpus}",
            subcategory="{embedder} / {reranker}",
        ),
        bars=report(
            f"{CELL_DIR}/condition_bars.png",
            caption=f"{CAPTIONS}/report_bars.rst",
            category="{corpus}",
            subcategory="{embedder} / {reranker}",
        ),
        dose=report(
            f"{CELL_DIR}/dose_response.png",
            caption=f"{CAPTIONS}/report_dose.rst",
            category="{corpus}",
            subcategory="{embedder} / {reranker}",
        ),
        section_recall_fig=report(
            f"{CELL_DIR}/section_recall.png",
            caption=f"{CAPTIONS}/report_section_recall.rst",
            category="{corpus}",
            subcategory="{embedder} / {reranker}",
        ),
    params:
        conditions=CONDITIONS,
        metric=PRIMARY_METRIC,
        n_boot=config["statistics"]["bootstrap_iters"],
        seed=config["seed"],
        reranker=lambda w: {w.reranker: config["rerankers"][w.reranker]},
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/{embedder}/{reranker}/report_cell.log",
    localrule: True
    script:
        "../workflow_scripts/report_cell.py"


rule report_corpus:
    message:
        "report tables and figures of corpus {wildcards.corpus}"
    input:
        contrasts=lambda w: cell_paths(
            R, report_cells([w.corpus], EMBEDDERS, rerankers_for), "contrasts.parquet"),
        chunks=lambda w: [f"{R}/{w.corpus}/chunks/{cs}.parquet" for cs in CHUNKSETS],
        embed_stats=lambda w: [f"{R}/{w.corpus}/{e}/embeddings/{cs}.json"
                               for e in EMBEDDERS for cs in CHUNKSETS],
        corpus_report=lambda w: corpus_report_file(R, config["corpora"], w.corpus),
    output:
        forest=report(f"{RP}/{{corpus}}/forest.png",
                      caption=f"{CAPTIONS}/report_forest.rst",
                      category="{corpus}", subcategory="corpus"),
        size_matching=f"{RP}/{{corpus}}/size_matching.parquet",
        size_matching_table=report(f"{RP}/{{corpus}}/size_matching.html",
                                   caption=f"{CAPTIONS}/report_size_matching.rst",
                                   category="{corpus}", subcategory="corpus"),
        funnel=report(f"{RP}/{{corpus}}/funnel.png",
                      caption=f"{CAPTIONS}/report_funnel.rst",
                      category="{corpus}", subcategory="corpus"),
    params:
        metric=PRIMARY_METRIC,
        conditions=CONDITIONS,
        chunksets=CHUNKSETS,
        embedders=EMBEDDERS,
        size_match_structure=config["size_match_structure"],
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/report_corpus.log",
    localrule: True
    script:
        "../workflow_scripts/report_corpus.py"


rule report_page:
    message:
        f"write the summary page {RP}/index.html"
    input:
        summaries=cell_paths(R, REPORT_CELLS, "summary.parquet"),
        contrasts=cell_paths(R, REPORT_CELLS, "contrasts.parquet"),
        dose=cell_paths(R, REPORT_CELLS, "dose_response.parquet"),
        cis=cell_paths(RP, REPORT_CELLS, "condition_cis.parquet"),
        section_recall=cell_paths(RP, REPORT_CELLS, "section_recall.parquet"),
        cell=cell_paths(RP, REPORT_CELLS, "cell.json"),
        size_matching=[f"{RP}/{c}/size_matching.parquet" for c in config["corpora"]],
        corpus_reports=[corpus_report_file(R, config["corpora"], c) for c in config["corpora"]],
        a1_stats=[f"{R}/{c}/chunks/A1.json" for c in config["corpora"]] if "A1" in CONDITIONS
        else [],
        figures=[p for f in ("condition_bars", "dose_response", "section_recall")
                 for p in cell_paths(RP, REPORT_CELLS, f"{f}.png")]
        + [f"{RP}/{c}/{f}.png" for c in config["corpora"] for f in ("forest", "funnel")],
    output:
        markdown=f"{RP}/index.md",
        html=f"{RP}/index.html",
        overview=report(f"{RP}/overview.html",
                        caption=f"{CAPTIONS}/report_overview.rst",
                        category="Overview"),
    params:
        cells=[list(c) for c in REPORT_CELLS],
        corpora=list(config["corpora"]),
        corpus_types={c: v["type"] for c, v in config["corpora"].items()},
        embedders=config["embedders"],
        rerankers=config["rerankers"],
        llm=llm_stages(config),
        conditions=CONDITIONS,
        measures=config["metrics"]["measures"],
        primary=config["statistics"]["primary"],
        size_match_structure=config["size_match_structure"],
        inducer=config["induction"]["inducer"],
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/report_page.log",
    localrule: True
    script:
        "../workflow_scripts/report_page.py"
