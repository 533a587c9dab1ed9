# Chunking: one chunk table per chunkset (conditions that differ only in retrieval share one),
# A1's situating contexts, and the induced structure the A family cuts along.


rule chunk:
    input:
        documents=P.documents(W["corpus"]),
        paragraphs=P.paragraphs(W["corpus"]),
        sections=structure_file,
        size_reference=size_reference_file,
    output:
        chunks=P.chunks(W["corpus"], W["chunkset"]),
        stats=P.chunk_stats(W["corpus"], W["chunkset"]),
    params:
        settings=trigger("chunk"),
    wildcard_constraints:
        chunkset=_alternatives(PLAN.chunked),
    resources:
        mem_mb=lambda w, attempt: 8000 * attempt,
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/chunk_{chunkset}"),
    script:
        glue("chunk")


rule contextualize:
    input:
        chunks=P.chunks(W["corpus"], "A0"),
        documents=P.documents(W["corpus"]),
        recorded=PLAN.recorded_generations("contexts"),
    output:
        chunks=P.chunks(W["corpus"], "A1"),
        stats=P.chunk_stats(W["corpus"], "A1"),
    params:
        settings=trigger("contextualize"),
    threads: 2
    resources:
        gpu=int(PLAN.stage_llm("contexts").mode != "replay"),
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/contextualize"),
    script:
        glue("contextualize")


rule induce_structure:
    input:
        documents=P.documents(W["corpus"]),
        paragraphs=P.paragraphs(W["corpus"]),
        gold_sections=P.sections(W["corpus"], "gold"),
        recorded=PLAN.recorded_generations("induction")
        if PLAN.settings.induction.inducer == "llm" else [],
    output:
        sections=P.sections(W["corpus"], "induced"),
        report=P.induction_report(W["corpus"]),
    params:
        settings=trigger("induce_structure"),
    threads: 2
    resources:
        gpu=int(PLAN.settings.induction.inducer == "llm"
                and PLAN.stage_llm("induction").mode != "replay"),
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/induce_structure"),
    script:
        glue("induce_structure")
