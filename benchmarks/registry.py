"""Every benchmark behind a table of the Benchmarks page: the commands that rerun it and the code its numbers depend on.

``python -m benchmarks all`` runs :data:`BENCHMARKS` in this order; ``benchmarks.tables``
renders a results file only when none of its benchmark's :attr:`Benchmark.sources` changed
after the commit the file records (:func:`benchmarks.meta.stale_reason`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The packages a whole ``crowdqa`` process (command line or service) runs.
WHOLE = ("aggregation", "ingest", "quality", "jobs", "store", "api")


@dataclass(frozen=True)
class Benchmark:
    """One Benchmarks table's benchmark.

    ``steps`` are the argument lists (after ``python``) that write ``stem``'s full results, in
    order (a later step may ``--merge`` into an earlier one's file); ``quick`` the steps of the
    quick subset (writing ``<stem>_quick.json``), empty when the benchmark is not in it.
    ``sources`` are repository paths (files or folders) whose change makes the results stale.
    """

    stem: str
    what: str
    steps: tuple[tuple[str, ...], ...]
    quick: tuple[tuple[str, ...], ...]
    sources: tuple[str, ...]


def _m(module: str, *args: str) -> tuple[str, ...]:
    return ("-m", f"benchmarks.{module}", *args)


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("pico_study", "PICO study: MV/DS/HMM-Crowd against the experts, the published aggregates",
              (_m("pico_study"),), (_m("pico_study", "--quick"),),
              ("aggregation", "quality", "ingest", "benchmarks/pico_study.py", "benchmarks/_pico.py")),
    Benchmark("categorical", "RTE, TEMP, Bluebirds accuracy against gold, beside crowd-kit",
              (_m("categorical"),), (_m("categorical", "--quick"),),
              ("aggregation", "ingest", "benchmarks/categorical.py")),
    Benchmark("whole_path", "the whole crowdqa aggregate process against crowd-kit's, and the API job",
              (_m("whole_path", "--sizes", "3e5,1e6,3e6", "--cap", "600"),
               _m("whole_path", "--sizes", "3e7", "--no-peer", "--no-api", "--merge", "--cap", "1800")),
              (_m("whole_path", "--quick", "--cap", "120"),),
              (*WHOLE, "benchmarks/whole_path.py", "benchmarks/ds_speed.py", "benchmarks/service_overhead.py")),
    Benchmark("whole_path_5000w", "the report against the fit with 5,000 workers",
              (_m("whole_path", "--sizes", "3e6", "--workers", "5000", "--no-peer", "--no-api", "--cap", "1800"),),
              (), (*WHOLE, "benchmarks/whole_path.py", "benchmarks/ds_speed.py")),
    Benchmark("real_path", "the whole process on Snow, Bluebirds and PICO against crowd-kit's",
              (_m("real_path", "--repeats", "3", "--cap", "200"),), (),
              (*WHOLE, "benchmarks/real_path.py", "benchmarks/whole_path.py", "benchmarks/categorical.py")),
    Benchmark("categorical_speed", "categorical fits against crowd-kit's at 300k labels",
              (_m("categorical_speed", "--cap", "900", "--cap-for", "glad=300", "--cap-for", "mmsr=240"),),
              (_m("categorical_speed", "--quick"),), ("aggregation", "benchmarks/categorical_speed.py")),
    Benchmark("readers", "reader throughput per format", (_m("readers"),), (_m("readers", "--quick"),),
              ("ingest", "aggregation/corpus.py", "benchmarks/readers.py", "benchmarks/whole_path.py")),
    Benchmark("document_memory", "reading memory per input size: one long document, many short, past the bound",
              (_m("document_memory"),), (_m("document_memory", "--quick"),),
              ("ingest", "aggregation/corpus.py", "benchmarks/document_memory.py")),
    Benchmark("ds_speed", "Dawid-Skene time and memory against crowd-kit", (_m("ds_speed"),),
              (_m("ds_speed", "--quick"),), ("aggregation", "benchmarks/ds_speed.py", "benchmarks/whole_path.py")),
    Benchmark("hmm_crowd", "HMM-Crowd against the authors' code on conll_val; the PICO fit",
              (_m("hmm_crowd"),), (_m("hmm_crowd", "--quick"),),
              ("aggregation", "quality", "ingest", "benchmarks/hmm_crowd.py", "benchmarks/hmm_crowd_authors.py",
               "benchmarks/_pico.py")),
    Benchmark("bsc_seq", "BSC-seq against HMM-Crowd on PICO and a synthetic NER crowd", (_m("bsc_seq"),),
              (_m("bsc_seq", "--quick"),),
              ("aggregation", "quality", "ingest", "jobs", "benchmarks/bsc_seq.py", "benchmarks/ner_crowd.py",
               "benchmarks/pico_study.py", "benchmarks/_pico.py")),
    Benchmark("compare", "crowdqa compare (mv, ds, ibcc, hmm-crowd, bsc-seq) on conll_val and PICO dev",
              (_m("compare"),), (_m("compare", "--quick"),),
              ("aggregation", "quality", "ingest", "jobs", "benchmarks/compare.py", "benchmarks/_pico.py")),
    Benchmark("tagger", "hmm-crowd-tagger on conll_val and PICO dev: defaults by the protocol, pre-annotation",
              (_m("tagger"),), (_m("tagger", "--quick"),),
              ("aggregation", "quality", "ingest", "benchmarks/tagger.py", "benchmarks/seq_protocol.py",
               "benchmarks/_pico.py")),
    Benchmark("method_choice", "auto's choice with half of each gold set as experts: regret beside always-DS/MV",
              (_m("method_choice"),), (_m("method_choice", "--quick"),),
              ("aggregation", "quality", "ingest", "jobs", "benchmarks/method_choice.py", "benchmarks/_pico.py",
               "benchmarks/categorical.py", "benchmarks/compare.py")),
    Benchmark("seq_protocol", "sequence methods on conll_val and PICO dev; how BSC-seq's defaults were chosen",
              (_m("seq_protocol"),), (_m("seq_protocol", "--quick"),),
              ("aggregation", "quality", "ingest", "benchmarks/seq_protocol.py", "benchmarks/_pico.py")),
    Benchmark("ingest_pico", "PICO ingest throughput and memory", (_m("ingest_pico"),), (),
              ("ingest", "aggregation/corpus.py", "benchmarks/ingest_pico.py")),
    Benchmark("scaling", "MV/DS/HMM-Crowd time and memory from 10^4 to 10^7 labels", (_m("scaling"),),
              (_m("scaling", "--quick"),), ("aggregation", "benchmarks/scaling.py", "benchmarks/ds_speed.py")),
    Benchmark("service_overhead", "job overhead and polling latency of the service",
              (("benchmarks/service_overhead.py",),),
              (("benchmarks/service_overhead.py", "--quick", "--output",
                "benchmarks/results/service_overhead_quick.json"),),
              (*WHOLE, "benchmarks/service_overhead.py")),
    Benchmark("load", "20 concurrent clients against the service", (("benchmarks/load.py",),),
              (("benchmarks/load.py", "--quick", "--output", "benchmarks/results/load_quick.json"),),
              (*WHOLE, "benchmarks/load.py", "benchmarks/service_overhead.py")),
    Benchmark("sample_size_example", "SLiCE plan against the intervals of the expert documents",
              (_m("sample_size_example"),), (_m("sample_size_example", "--quick"),),
              ("aggregation", "quality", "ingest", "benchmarks/sample_size_example.py", "benchmarks/pico_study.py",
               "benchmarks/_pico.py")),
    Benchmark("routing", "interval narrowing per expert document revealed", (_m("routing"),),
              (_m("routing", "--quick"),),
              ("aggregation", "quality", "ingest", "benchmarks/routing.py", "benchmarks/_pico.py")),
    Benchmark("calibration", "span-score calibration of every method on conll_val and PICO dev; default temperatures",
              (_m("calibration"),), (_m("calibration", "--quick"),),
              ("aggregation", "quality", "ingest", "benchmarks/calibration.py", "benchmarks/seq_protocol.py",
               "benchmarks/_pico.py")),
    Benchmark("batches", "a new batch: an earlier model against a refit", (_m("batches"),),
              (_m("batches", "--quick"),),
              ("aggregation", "quality", "ingest", "jobs", "benchmarks/batches.py", "benchmarks/_pico.py")),
    Benchmark("spammers", "the worker verdict on planted spammers; blocking on real sets with the gold halved",
              (_m("spammers"),), (_m("spammers", "--quick"),),
              ("aggregation", "quality", "ingest", "jobs", "benchmarks/spammers.py", "benchmarks/categorical.py",
               "benchmarks/compare.py", "benchmarks/_pico.py")),
    Benchmark("tags", "tag labels: partial conll_val and PICO, a synthetic POS-like crowd, a 1M-label token table",
              (_m("tags"),), (_m("tags", "--quick"),),
              ("aggregation", "ingest", "benchmarks/tags.py", "benchmarks/_tag_crowd.py", "benchmarks/_pico.py",
               "benchmarks/bsc_seq.py")),
)

BY_STEM: dict[str, Benchmark] = {b.stem: b for b in BENCHMARKS}
#: results stem -> the paths whose change makes it stale: every benchmark's, and the timing of a
#: whole rerun (``python -m benchmarks all``), which any benchmark's code can change.
SOURCES: dict[str, tuple[str, ...]] = {
    **{b.stem: b.sources for b in BENCHMARKS},
    "rerun_all": tuple(sorted({p for b in BENCHMARKS for p in b.sources} | {"benchmarks"})),
}
