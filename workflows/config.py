"""Settings shared by every stage (set them in luigi.cfg under [paranmt] or on the command line),
and the Luigi parameters derived from the core packages' config dataclasses."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import Field
from typing import Any

import luigi

from corpus.comma_lists import comma_items
from corpus.readers import named_file
from corpus.settings import choices_of, settings_of
from pipelines.options import LINES_PER_WORKER, ROWS_PER_WORKER, SCORED_ROWS_PER_WORKER


class AtLeast(luigi.NumericalParameter):
    """A number that may not be below ``minimum`` (a count, a size), checked however it is given:
    on the command line, in luigi.cfg or from Python (Luigi's own check covers the first two)."""

    def __init__(self, var_type: type, minimum: float, **kwargs):
        super().__init__(var_type=var_type, min_value=minimum, max_value=math.inf, **kwargs)

    def normalize(self, x):
        return self.parse(x)


def count_parameter(default: int, description: str, minimum: int = 1, **kwargs) -> AtLeast:
    """A whole number of at least ``minimum`` (1: a count of rows, shards, pairs, epochs)."""
    return AtLeast(int, minimum, default=default, description=description, **kwargs)


class AbsolutePath(luigi.Parameter):
    """A file or folder path, made absolute against the folder the command runs in (empty stays
    empty, meaning none): Beam's workers (a Dask worker, a portable SDK worker) open it from
    folders of their own, where a relative path names another place. Every path parameter is one."""

    def normalize(self, x):
        return os.path.abspath(x) if x else x


class SetOnceForTheCorpus:
    """A parameter that says which corpus a command builds or reads (its inputs, their language,
    the translator, given pairs or translations, the PP model): every task that needs the corpus
    declares it, and a config file sets it once, under ``[BuildParaNMT]``, for all of them. The
    command line and the task's own section still come first. Luigi reads a task's own section
    only: ``[BuildParaNMT] inputs`` left DecileSweep and TrainOnFiltered on the demo corpus."""

    SECTION = "BuildParaNMT"

    def _value_iterator(self, task_name, param_name):
        *given, default = super()._value_iterator(task_name, param_name)
        yield from given
        yield (self._get_value_from_config(self.SECTION, param_name), None)
        yield default


class CorpusParameter(SetOnceForTheCorpus, luigi.Parameter):
    """A string that names the corpus (SetOnceForTheCorpus)."""


class CorpusPath(SetOnceForTheCorpus, AbsolutePath):
    """A path that names the corpus (SetOnceForTheCorpus)."""


class CorpusDict(SetOnceForTheCorpus, luigi.DictParameter):
    """A dictionary that names the corpus (SetOnceForTheCorpus): the translator's training settings."""


class SourcesParameter(AbsolutePath):
    """Comma-separated paths, each optionally written ``NAME=path`` (corpus.readers.named_file:
    a share of a training source, ``0.5=pairs.tsv``), each path made absolute as AbsolutePath's."""

    def normalize(self, x):
        if not x:
            return x
        items = []
        for item in comma_items(x):
            name, path = named_file(item)
            items.append(f"{name}={os.path.abspath(path)}" if name else os.path.abspath(item))
        return ",".join(items)


# The value that says "none" to a parameter whose default names something (a model, a file, a
# list): Luigi takes an empty value on the command line for "not given", i.e. the default.
NONE = "none"


class NoneSpelled(luigi.Parameter):
    """A parameter whose value ``none`` (NONE, any case) means none: the task sees ''. An empty
    value in luigi.cfg means none too; on the command line Luigi takes it for the default."""

    def normalize(self, x):
        return "" if isinstance(x, str) and x.strip().lower() == NONE else super().normalize(x)


class OptionalPath(NoneSpelled, AbsolutePath):
    """A path parameter whose default is a file, and whose value ``none`` means no file (a file
    named none in the current folder is ``./none``)."""


class paranmt(luigi.Config):  # noqa: N801 - the luigi.cfg section name
    workdir = AbsolutePath(default="work", description="Directory that holds every stage's output.")
    runner = luigi.Parameter(default="DirectRunner",
                             description="Beam runner: DirectRunner, DaskRunner, PortableRunner, FlinkRunner, SparkRunner, DataflowRunner.")
    dask_scheduler = luigi.Parameter(default="",
                                     description="DaskRunner: the dask.distributed scheduler's address, e.g. tcp://127.0.0.1:8786 (empty: a "
                                                 "local cluster started for each stage).")
    dask_translation_resource = luigi.Parameter(default="",
                                                description="DaskRunner: the worker resource that translating and scoring by a translator "
                                                            "need, e.g. GPU for workers started with --resources GPU=1: only they run those "
                                                            "units, one at a time each with a model of its own (one model per GPU); the other "
                                                            "stages run on any worker. Empty: any worker.")
    direct_num_workers = count_parameter(default=0, minimum=0,
                                         description=f"DirectRunner worker processes (0 = by input size: in process below {ROWS_PER_WORKER:,} "
                                                     f"rows, then one per {ROWS_PER_WORKER:,} rows up to one per core; raw text: per "
                                                     f"{LINES_PER_WORKER:,} lines; scored translations: per {SCORED_ROWS_PER_WORKER:,}; 1 = in "
                                                     "process).")
    beam_args = luigi.Parameter(default="", description="Extra Beam pipeline options passed through verbatim, e.g. '--flink_master=host:8081'.")


_PARAMETER_TYPES = {"int": luigi.IntParameter, "float": luigi.FloatParameter, "str": luigi.Parameter}
_NUMBER_TYPES = {"int": int, "float": float}


def _parameter(setting_field: Field, for_the_corpus: bool = False) -> luigi.Parameter:
    """The Luigi parameter of one :func:`corpus.settings.setting` field (``for_the_corpus``: set
    once for every task that reads the corpus, SetOnceForTheCorpus)."""
    common = {"default": setting_field.default, "description": setting_field.metadata["help"], "significant": setting_field.metadata["significant"]}
    if choices := choices_of(setting_field):
        kind, common = luigi.ChoiceParameter, {**common, "choices": choices}
    elif setting_field.type == "bool":
        kind, common = luigi.BoolParameter, {**common, "parsing": luigi.BoolParameter.EXPLICIT_PARSING}
    elif setting_field.metadata.get("minimum") is not None:
        kind, common = AtLeast, {**common, "var_type": _NUMBER_TYPES[setting_field.type], "minimum": setting_field.metadata["minimum"]}
    else:
        kind = _PARAMETER_TYPES[setting_field.type]
    if for_the_corpus:
        kind = type(f"Corpus{kind.__name__}", (SetOnceForTheCorpus, kind), {})
    return kind(**common)


def with_settings(*config_types: type, only: tuple[str, ...] = (), for_the_corpus: tuple[str, ...] = ()) -> Callable[[type], type]:
    """Class decorator: every setting of each config dataclass (or the ``only`` ones) becomes a
    Luigi parameter of the task, with the dataclass's default and help text (one declaration
    per setting); those named in ``for_the_corpus`` say which corpus is meant (SetOnceForTheCorpus)."""

    def add(task_type: type) -> type:
        for config_type in config_types:
            for setting_field in settings_of(config_type):
                if only and setting_field.name not in only:
                    continue
                parameter = _parameter(setting_field, setting_field.name in for_the_corpus)
                parameter.__set_name__(task_type, setting_field.name)  # what a class body does
                setattr(task_type, setting_field.name, parameter)
        return task_type

    return add


def config_from(task: luigi.Task, config_type: type, **values: Any) -> Any:
    """``config_type`` filled from the task's parameters of the same names (``values`` win);
    settings the task does not expose keep their defaults."""
    given = {f.name: getattr(task, f.name) for f in settings_of(config_type) if hasattr(task, f.name)}
    return config_type(**{**given, **values})
