# Evaluation: per-query scores for every cell and condition, and per-cell summaries.


rule score:
    message:
        "score {wildcards.corpus}/{wildcards.embedder}/{wildcards.reranker}/{wildcards.condition}"
    input:
        run=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/runs/{{condition}}.parquet",
        chunks=lambda w: f"{R}/{w.corpus}/chunks/{chunkset_of(w)}.parquet",
        queries=f"{R}/{{corpus}}/queries.parquet",
        qrels=f"{R}/{{corpus}}/qrels.parquet",
    output:
        scores=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/scores/{{condition}}.parquet",
    params:
        measures=config["metrics"]["measures"],
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/{embedder}/{reranker}/score_{condition}.log",
    script:
        "../workflow_scripts/score.py"


rule summarize_cell:
    message:
        "summarize {wildcards.corpus}/{wildcards.embedder}/{wildcards.reranker}"
    input:
        scores=expand(
            f"{R}/{{{{corpus}}}}/{{{{embedder}}}}/{{{{reranker}}}}/scores/{{condition}}.parquet",
            condition=CONDITIONS,
        ),
    output:
        summary=report(
            f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/summary.parquet",
            category="Per-condition means",
            subcategory="{corpus} / {embedder} / {reranker}",
            caption="../resources/report/summary.rst",
        ),
    params:
        conditions=CONDITIONS,
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/{embedder}/{reranker}/summarize.log",
    localrule: True
    script:
        "../workflow_scripts/summarize_cell.py"


rule summary_markdown:
    message:
        "write the Markdown summary of all cells"
    input:
        summaries=[
            f"{R}/{corpus}/{embedder}/{reranker}/summary.parquet"
            for corpus in config["corpora"]
            for embedder in EMBEDDERS
            for reranker in rerankers_for(embedder)
        ],
    output:
        markdown=f"{R}/summary.md",
    params:
        rerankers=config["rerankers"],
        embedders=config["embedders"],
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/summary_markdown.log",
    localrule: True
    script:
        "../workflow_scripts/summary_markdown.py"


rule contrasts:
    message:
        "contrasts of {wildcards.corpus}/{wildcards.embedder}/{wildcards.reranker}"
    input:
        scores=expand(
            f"{R}/{{{{corpus}}}}/{{{{embedder}}}}/{{{{reranker}}}}/scores/{{condition}}.parquet",
            condition=CONDITIONS,
        ),
    output:
        contrasts=report(
            f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/contrasts.parquet",
            category="Contrasts",
            subcategory="{corpus} / {embedder} / {reranker}",
            caption="../resources/report/contrasts.rst",
        ),
        contrasts_qtype=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/contrasts_qtype.parquet",
        dose_response=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/dose_response.parquet",
    params:
        conditions=CONDITIONS,
        statistics=config["statistics"],
        seed=config["seed"],
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/{embedder}/{reranker}/contrasts.log",
    script:
        "../workflow_scripts/contrasts.py"


rule trec_export:
    message:
        "TREC run and qrels of {wildcards.corpus}/{wildcards.embedder}/{wildcards.reranker}/"
        "{wildcards.condition}"
    input:
        run=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/runs/{{condition}}.parquet",
        chunks=lambda w: f"{R}/{w.corpus}/chunks/{chunkset_of(w)}.parquet",
        qrels=f"{R}/{{corpus}}/qrels.parquet",
    output:
        run=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/trec/{{condition}}.run",
        qrels=f"{R}/{{corpus}}/{{embedder}}/{{reranker}}/trec/{{condition}}.qrels",
    conda:
        "../envs/cpu.yaml"
    log:
        "logs/{corpus}/{embedder}/{reranker}/trec_{condition}.log",
    localrule: True
    script:
        "../workflow_scripts/trec_export.py"
