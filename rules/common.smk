# Shared set-up: the plan (validated settings, grid, paths), wildcard constraints and target
# functions. Every rule's work is one call into the package structablate (src/structablate);
# every path comes from PLAN.paths, every setting from PLAN.rule_settings (docs/architecture.md).

import re
import sys
from pathlib import Path

from snakemake.settings.types import DeploymentMethod

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from structablate.settings import questions_file
from structablate.user_files import check_questions_file, document_files
from structablate.errors import ConfigError
from structablate.group_keep import install as keep_finished_members
from structablate.plan import Plan
from structablate.plan import jobs as source_files
from structablate.plan.checks import container_warning
from structablate.plan.groups import slurm_group
from structablate.plan.resources import Sizer, planned_executor_settings
from structablate.plan.rules import rule as table_entry
from structablate.results_paths import page_files
from structablate.slurm import FAILURES, check_status_command, slurm_extra_problems
from structablate.slurm_dry_run import install as show_submissions_in_dry_run
from structablate.workflow import (
    forced_rules,
    guard_results,
    guard_working_folder,
    stale_message,
    stale_outputs,
    workdir_id,
)

_SOURCE = ", ".join(map(str, workflow.configfiles)) or "config"
if workflow.config_settings.config:
    _SOURCE += " with --config " + " ".join(sorted(workflow.config_settings.config))
PLAN = Plan.from_config(config, source=_SOURCE, check_models=False)
# A slurm_extra the executor plugin would refuse on every submission is refused here.
_extras = {f"{where}: slurm_extra": res["slurm_extra"].raw
           for where, res in [("default-resources", workflow.resource_settings.default_resources
                               or {}),
                              *((f"set-resources: {rule}", r) for rule, r in
                                workflow.resource_settings.overwrite_resources.items())]
           if "slurm_extra" in res}
if slurm_extra_problems(_extras):
    raise ConfigError("\n".join(slurm_extra_problems(_extras)))
# Every model and dataset the run reads, looked up offline once, by the Snakemake that plans
# (a job's own Snakemake, on a node, skips it): a dry run lists the missing ones in one
# warning block and still shows the grid; a real run stops before its first job (onstart).
MODEL_PROBLEMS = [] if workflow.remote_exec or workflow.subprocess_exec else PLAN.model_problems()
if MODEL_PROBLEMS:
    import atexit
    from snakemake.logging import logger

    logger.warning(PLAN.models_message(MODEL_PROBLEMS))

    def _REPEAT():
        """A dry run lists thousands of lines of jobs below the block: the block again at the
        very end (a real run stops in onstart with the same message, which ends its output
        anyway)."""
        print("\n" + PLAN.models_message(MODEL_PROBLEMS), file=sys.stderr)

    atexit.register(_REPEAT)
# The Apptainer image every rule runs in under --sdm apptainer (config key container, checked
# by the plan; null: the environment Snakemake runs in). A disagreement is said once.
_CONTAINER_NOTE = None if workflow.remote_exec or workflow.subprocess_exec else container_warning(
    PLAN.settings.container,
    DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method)
if _CONTAINER_NOTE:
    from snakemake.logging import logger

    logger.warning(_CONTAINER_NOTE)


container: PLAN.settings.container


# A group job that fails keeps the outputs of its members that had finished, and its retry
# runs only the others (structablate.group_keep). Installed here, not in onstart: the
# Snakemake that runs a group job on the node removes its members' outputs first, and it
# skips onstart (--no-hooks). Only group jobs change, and they exist in cluster runs only.
from snakemake.logging import logger as _logger

keep_finished_members(_logger)

# A dry run with the SLURM profile lists jobs, not group jobs: after the job list it prints
# what each sbatch submission would book (structablate.slurm_dry_run). Local runs: nothing.
show_submissions_in_dry_run(workflow, _logger, planned_executor_settings())


# Two Snakemakes in one working folder race on Snakemake's own locks: one writing another
# results folder is refused here, before Snakemake locks (structablate.workflow).
_GUARDS = [] if workflow.remote_exec or workflow.subprocess_exec else [
    guard_working_folder(PLAN.settings.results)]


onstart:
    if MODEL_PROBLEMS:
        atexit.unregister(_REPEAT)
        raise ConfigError(PLAN.models_message(MODEL_PROBLEMS))
    # one run at a time writes a results folder, from whichever working folder
    _GUARDS.append(guard_results(PLAN.settings.results))
    # a SLURM run: a status command that works here, said at the start; failing polls shown
    from snakemake.logging import logger

    check_status_command(workflow, logger)


# Each job's threads, memory and runtime from the work it is given, fitted to the SLURM
# profile's partitions (structablate.plan.resources; docs/cluster.md, "Sizes").
SIZE = Sizer.for_workflow(workflow, FAILURES)
SIZE.check_profile()  # a broken partitions.yaml is refused here, dry runs included


P = PLAN.paths
W = {k: f"{{{k}}}" for k in ("corpus", "embedder", "reranker", "condition", "chunkset")}
SCRIPTS = Path(workflow.basedir) / "workflow_scripts"
CAPTIONS = "../resources/report"
CELL = (W["corpus"], W["embedder"], W["reranker"])
CORPUS_TABLES = dict(
    documents=P.documents(W["corpus"]),
    paragraphs=P.paragraphs(W["corpus"]),
    sections=P.sections(W["corpus"], "gold"),
)
QUESTIONS = dict(queries=P.queries(W["corpus"]), qrels=P.qrels(W["corpus"]))


def _alternatives(names):
    """A wildcard regex matching exactly the given names (never matches if none)."""
    names = list(names)
    if not names:
        return "(?!x)x"
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


wildcard_constraints:
    corpus=_alternatives(PLAN.corpora),
    embedder=_alternatives(PLAN.embedders),
    reranker=_alternatives(PLAN.rerankers),
    condition=_alternatives(PLAN.conditions),
    chunkset=_alternatives({*PLAN.chunksets, *PLAN.chunked}),


def corpora_where(test):
    """Corpora for which ``test(name)`` holds."""
    return [c for c in PLAN.corpora if test(c)]


def built_by(rule_name):
    """A wildcard regex of the corpora whose documents rule `rule_name` builds."""
    return _alternatives(c for c in PLAN.corpora
                         if PLAN.source_facts(c).build_rule == rule_name)


def questions_mapped_by(rule_name):
    """A wildcard regex of the corpora whose own questions rule `rule_name` maps apart from
    their documents (none whose questions are generated)."""
    return _alternatives(c for c in PLAN.corpora if not PLAN.generates_queries(c)
                         and PLAN.source_facts(c).questions_rule == rule_name)


def glue(name):
    """The script path of glue `name` (workflow_scripts/<name>.py)."""
    return f"../workflow_scripts/{name}.py"


TRIGGERS = {}


# What a rule reads of its entry in the rule table (structablate.plan.rules.RULES), each by
# the rule's own name: its params, threads, resources and SLURM group.
def trigger(name):
    """The rule's params: its settings that can change outputs, and the fingerprint of the
    code its glue script (the entry's) runs."""
    TRIGGERS[name] = PLAN.trigger(name, SCRIPTS / f"{table_entry(name).glue}.py")
    return TRIGGERS[name]


def threads_of(name):
    """The rule's threads: from the work each job is given (structablate.plan.resources)."""
    return SIZE.threads_of(PLAN, table_entry(name).name)


def resources_of(name):
    """The rule's resources (gpu, mem_mb, runtime), fitted to the profile's partitions."""
    return SIZE.resources_of(PLAN, table_entry(name).name)


def localrule_of(name):
    """Whether the rule's jobs run on the submit host (its table entry: no rate, or its
    submit_host holds of the plan)."""
    return table_entry(name).on_submit_host(PLAN)


def group_of(name):
    """The rule's group: each job's SLURM group job (structablate.plan.groups)."""
    table_entry(name)

    def group(wildcards):
        return slurm_group(workflow, PLAN, name, wildcards)

    return group


def check_records():
    """Refuse outputs made with other settings that Snakemake cannot see (no record of them in
    this working folder's .snakemake/): structablate.workflow.stale_outputs. Jobs of rules
    named in --forcerun (or all, with --forceall) are rerun anyway and not checked."""
    forceall, forced = forced_rules(sys.argv)
    if workflow.remote_exec or workflow.subprocess_exec or forceall:
        return

    def current(name, wildcards):
        if name not in TRIGGERS or name in forced:
            return None
        return TRIGGERS[name](wildcards)

    stale = stale_outputs(PLAN.settings.results, set(all_targets()), current,
                          workdir_id(create=True))
    if stale:
        raise ConfigError(stale_message(_SOURCE, PLAN.settings.results, stale))


def log(name):
    return P.log(name)


def all_targets():
    """Every output the workflow documents for the grid (docs/contracts.md), the intermediate
    ones included: the corpus tables, token table, sections, chunks, vectors and runs as well
    as the scores, statistics, TREC files and report. Snakemake does not rebuild a missing
    file whose consumers are up to date, so a vector or run file that a failed rerun deleted
    stayed missing under "Nothing to be done"; as a target it is rebuilt."""
    targets = []
    for corpus in PLAN.corpora:
        targets += [*CORPUS_TABLES.values(), *QUESTIONS.values(), P.funnel(W["corpus"]),
                    P.tokens(W["corpus"]), P.bm25(W["corpus"]), P.bm25_per_query(W["corpus"])]
        if PLAN.source_facts(corpus).build_report:
            targets.append(P.corpus_report(W["corpus"]))
        if PLAN.generates_queries(corpus):
            targets.append(P.query_candidates(W["corpus"]))
        if PLAN.needs_induced_structure:
            targets += [P.sections(W["corpus"], "induced"), P.induction_report(W["corpus"])]
        for cs in dict.fromkeys([*PLAN.chunksets, *PLAN.chunked]):
            targets += [P.chunks(W["corpus"], cs), P.chunk_stats(W["corpus"], cs)]
        for e in PLAN.embedders:
            for cs in [*PLAN.chunksets, "queries"]:
                targets += [P.vectors(W["corpus"], e, cs), P.vector_stats(W["corpus"], e, cs)]
        targets += [P.report_corpus(W["corpus"], f) for f in (
            "structure_quality.parquet", "comparison_checks.parquet", "size_matching.parquet",
            "size_matching.html", "forest.png", "forest.svg", "funnel.png", "funnel.svg")]
        targets = [t.replace(W["corpus"], corpus) for t in targets]
    for cell in PLAN.cells():
        c = (cell.corpus, cell.embedder, cell.reranker)
        for cond in PLAN.conditions:
            targets += [P.run(*c, cond), P.scores(*c, cond), P.trec_run(*c, cond),
                        P.trec_qrels(*c, cond),
                        P.run_report(cell.corpus, cell.embedder, cond)
                        if cell.reranker == "none" else P.rerank_report(*c, cond)]
        targets += [P.cell_table(*c, name) for name in
                    ("summary", "contrasts", "contrasts_qtype", "dose_response")]
        targets += [P.condition_cis(*c), P.section_recall(*c), P.ranking_identity(*c)]
        targets += [P.report_cell(*c, f) for f in (
            "contrasts_marked.parquet", "cell.json", "contrasts.html", "condition_means.html",
            "condition_bars.png", "dose_response.png", "section_recall.png",
            "condition_bars.svg", "dose_response.svg", "section_recall.svg")]
    targets.append(P.summary_markdown())
    targets += [P.report_page(f) for f in ("index.html", "index.md", "overview.html")]
    targets += [P.report_page(f"{c}/verdict.html") for c in PLAN.corpora]
    return list(dict.fromkeys(targets))


def chunkset_of(wildcards):
    return PLAN.condition(wildcards.condition).chunkset


def cell_inputs(make):
    """An input function: ``make(corpus, embedder, reranker, condition)`` per condition."""

    def inputs(w):
        return [make(w.corpus, w.embedder, w.reranker, c) for c in PLAN.conditions]

    return inputs


def condition_chunks_of(corpus, embedder, reranker, cond):
    """The chunks condition ``cond`` retrieves from (for :func:`cell_inputs`)."""
    return P.chunks(corpus, PLAN.condition(cond).chunkset)


def condition_chunks(w):
    """The chunks the job's condition retrieves from (A4: A3's)."""
    return P.chunks(w.corpus, chunkset_of(w))


def condition_vectors(w):
    """The embedder's vectors of the chunks the job's condition retrieves from."""
    return P.vectors(w.corpus, w.embedder, chunkset_of(w))


def windows_chunks(w):
    """The windows a contextualised chunkset's contexts are written for (A1: A0's)."""
    return P.chunks(w.corpus, PLAN.windows_of(w.chunkset))


def qasper_files(w):
    """The v0.3 files a QASPER corpus reads (hub splits are no files)."""
    return source_files.qasper_files(PLAN, w.corpus)


def wikipedia_export(w):
    """The XML export a Wikipedia corpus parses (none when it reads the MediaWiki API)."""
    return source_files.wikipedia_export(PLAN, w.corpus)


def recorded_questions(w):
    """The recorded generations a corpus's question generation replays, if it replays."""
    return PLAN.recorded_generations("queries", w.corpus)


def induced_sections(w):
    """The induced sections, where a condition reads them."""
    return [P.sections(w.corpus, "induced")] if PLAN.needs_induced_structure else []


def chunkset_chunks(w):
    """The corpus's chunks of every chunkset of the grid, in grid order."""
    return [P.chunks(w.corpus, cs) for cs in PLAN.chunksets]


def chunkset_stats(w):
    """The corpus's chunk statistics of every chunkset of the grid, in grid order."""
    return [P.chunk_stats(w.corpus, cs) for cs in PLAN.chunksets]


def corpus_contrasts(w):
    """The marked contrasts of every cell of the corpus, in grid order."""
    return [P.report_cell(c.corpus, c.embedder, c.reranker, "contrasts_marked.parquet")
            for c in PLAN.cells(w.corpus)]


def corpus_vector_stats(w):
    """The vector statistics of every embedder (outer) and chunkset (inner) of the corpus."""
    return [P.vector_stats(w.corpus, e, cs) for e in PLAN.embedders for cs in PLAN.chunksets]


def funnel_of(w):
    """The funnel the report draws for the corpus (Plan.funnel_file)."""
    return PLAN.funnel_file(w.corpus)


def user_document_files(w):
    """The document files of a user corpus (its questions file is map_user_questions')."""
    return document_files(PLAN.settings.corpora[w.corpus])


def user_questions_file(w):
    """A user corpus's questions file, refused before any job when it is not an ordinary
    readable file (a folder, a FIFO, a link to nothing: structablate.user_files)."""
    path = questions_file(PLAN.settings.corpora[w.corpus])
    check_questions_file(path)
    return [path]


def structure_file(w):
    """The sections table a chunkset's boundaries follow (or that labels fixed windows)."""
    return P.sections(w.corpus, PLAN.structure_of(w.chunkset))


def size_reference_file(w):
    """Fixed windows are sized to the structural chunks of size_match_structure."""
    kind = PLAN.size_reference(w.chunkset)
    return [P.sections(w.corpus, kind)] if kind else []


def report_item(path, caption, subcategory="{embedder} / {reranker}"):
    return report(path, caption=f"{CAPTIONS}/{caption}.rst", category="{corpus}",
                  subcategory=subcategory)


def report_of_cells(name):
    return [P.report_cell(c.corpus, c.embedder, c.reranker, name) for c in PLAN.cells()]


def tables_of_cells(name):
    return [P.cell_table(c.corpus, c.embedder, c.reranker, name) for c in PLAN.cells()]
