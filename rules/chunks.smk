# Chunking: one chunk table per chunkset (conditions that differ only in retrieval share one;
# GP and A0g, beyond the paper, are chunksets of their own), A1's situating contexts, and the
# induced structure the A family cuts along.


rule tokenize_corpus:
    input:
        documents=P.documents(W["corpus"]),
        paragraphs=P.paragraphs(W["corpus"]),
    output:
        tokens=P.tokens(W["corpus"]),
    params:
        settings=trigger("tokenize_corpus"),
    threads: threads_of("tokenize_corpus")
    resources:
        **resources_of("tokenize_corpus"),
    group: group_of("tokenize_corpus")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/tokenize_corpus"),
    benchmark:
        P.benchmark("{corpus}/tokenize_corpus"),
    script:
        glue("tokenize_corpus")


rule chunk:
    input:
        documents=P.documents(W["corpus"]),
        paragraphs=P.paragraphs(W["corpus"]),
        tokens=P.tokens(W["corpus"]),
        # gold or induced sections (the chunkset's structure; fixed windows: gold labels)
        sections=structure_file,
        # fixed windows only: A0/A1 size_match_structure's sections, A0g gold's
        size_reference=size_reference_file,
    output:
        chunks=P.chunks(W["corpus"], W["chunkset"]),
        stats=P.chunk_stats(W["corpus"], W["chunkset"]),
    params:
        settings=trigger("chunk"),
    wildcard_constraints:
        chunkset=_alternatives(PLAN.chunked),
    threads: threads_of("chunk")
    resources:
        **resources_of("chunk"),
    group: group_of("chunk")
    conda:
        "../envs/cpu.yaml"
    log:
        log("{corpus}/chunk_{chunkset}"),
    benchmark:
        P.benchmark("{corpus}/chunk_{chunkset}"),
    script:
        glue("chunk")


rule contextualize:
    input:
        # the windows the contexts are written for (A1: A0's)
        chunks=windows_chunks,
        documents=P.documents(W["corpus"]),
        recorded=PLAN.recorded_generations("contexts"),
    output:
        chunks=P.chunks(W["corpus"], W["chunkset"]),
        stats=P.chunk_stats(W["corpus"], W["chunkset"]),
    params:
        settings=trigger("contextualize"),
    wildcard_constraints:
        chunkset=_alternatives(PLAN.contextualized),
    # vLLM writes the contexts on one GPU; replaying recorded generations (or an OpenAI-style
    # server, or llama.cpp on CPUs) needs none. Sizes: docs/cluster.md.
    threads: threads_of("contextualize")
    resources:
        **resources_of("contextualize"),
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/contextualize_{chunkset}"),
    benchmark:
        P.benchmark("{corpus}/contextualize_{chunkset}"),
    script:
        glue("contextualize")


rule induce_structure:
    input:
        documents=P.documents(W["corpus"]),
        paragraphs=P.paragraphs(W["corpus"]),
        gold_sections=P.sections(W["corpus"], "gold"),
        recorded=PLAN.recorded_generations("induction") if PLAN.induction_uses_llm else [],
    output:
        sections=P.sections(W["corpus"], "induced"),
        report=P.induction_report(W["corpus"]),
    params:
        settings=trigger("induce_structure"),
    # the LLM inducer on one GPU while vLLM generates; TextTiling embeds paragraphs on CPUs;
    # replaying recorded generations needs two threads. Sizes: docs/cluster.md.
    threads: threads_of("induce_structure")
    resources:
        **resources_of("induce_structure"),
    group: group_of("induce_structure")
    conda:
        "../envs/gpu.yaml"
    log:
        log("{corpus}/induce_structure"),
    benchmark:
        P.benchmark("{corpus}/induce_structure"),
    script:
        glue("induce_structure")
