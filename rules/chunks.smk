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
    log:
        "logs/{corpus}/chunk_{chunkset}.log",
    script:
        "../workflow_scripts/chunk.py"
