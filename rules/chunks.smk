# Chunking: one chunk table per chunkset (conditions that differ only in retrieval share one).


rule chunk:
    message:
        "chunk {wildcards.corpus}/{wildcards.chunkset}"
    input:
        documents=f"{R}/{{corpus}}/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/paragraphs.parquet",
        sections=structure_file,
        size_reference=size_reference_file,
    output:
        chunks=f"{R}/{{corpus}}/chunks/{{chunkset}}.parquet",
        stats=f"{R}/{{corpus}}/chunks/{{chunkset}}.json",
    params:
        chunking=chunking_params,
    conda:
        "../envs/cpu.yaml"
    wildcard_constraints:
        # G2 is always available: the BM25 non-lexicality check reads it
        chunkset=_alternatives([c for c in {*CHUNKSETS, "G2"} if c != "A1"]),
    log:
        "logs/{corpus}/chunk_{chunkset}.log",
    script:
        "../workflow_scripts/chunk.py"


rule contextualize:
    message:
        "A1: LLM situating contexts for the size-matched windows of {wildcards.corpus}"
    input:
        chunks=f"{R}/{{corpus}}/chunks/A0.parquet",
        documents=f"{R}/{{corpus}}/documents.parquet",
    output:
        chunks=f"{R}/{{corpus}}/chunks/A1.parquet",
        stats=f"{R}/{{corpus}}/chunks/A1.json",
    params:
        llm=llm_params("contexts"),
        contexts=without_llm(config["contexts"]),
        tokenizer=chunk_tokenizer(),
    threads: 2
    resources:
        gpu=1,
    conda:
        "../envs/gpu.yaml"
    log:
        "logs/{corpus}/contextualize.log",
    script:
        "../workflow_scripts/contextualize.py"


rule induce_structure:
    message:
        "induce section structure of {wildcards.corpus} ({params.induction[inducer]})"
    input:
        documents=f"{R}/{{corpus}}/documents.parquet",
        paragraphs=f"{R}/{{corpus}}/paragraphs.parquet",
        gold_sections=f"{R}/{{corpus}}/sections_gold.parquet",
    output:
        sections=f"{R}/{{corpus}}/sections_induced.parquet",
        report=report(
            f"{R}/{{corpus}}/induction_report.json",
            category="Corpora",
            subcategory="{corpus}",
            caption="../resources/report/induction.rst",
        ),
    params:
        llm=lambda w: llm_params("induction")(w)
        if config["induction"]["inducer"] == "llm"
        else None,
        induction=without_llm(config["induction"]),
    threads: 2
    resources:
        gpu=lambda w: 1 if config["induction"]["inducer"] == "llm" else 0,
    conda:
        "../envs/gpu.yaml"
    log:
        "logs/{corpus}/induce_structure.log",
    script:
        "../workflow_scripts/induce_structure.py"
