"""Every parameter the user can get wrong is one line naming it, through the real command line,
and a non-zero exit; a number below its minimum is refused however it is given."""

import pytest
from test_bad_input_cli import run_luigi

from corpus.errors import InputError
from corpus.settings import settings_of
from models.nmt.translate import DecodeOptions
from workflows import AssignDeciles, BackTranslate, DecileSweep
from workflows.config import AtLeast, with_settings

UNHANDLED, SCHEDULING_FAILED = 40, 35  # luigi.cfg [retcode]: a failed start, a failed check


@pytest.mark.parametrize(
    ("args", "status", "expected"),
    [
        (["IngestBitext", "--num-shards", "many"], UNHANDLED, "--num-shards: invalid literal for int() with base 10: 'many'"),
        (["TrainOnFiltered", "--scorer", "bogus"], UNHANDLED, "--scorer: bogus is not a valid choice"),
        (["TrainEncoder", "--train-data", "x.tsv", "--model", "bogus"], UNHANDLED, "--model: bogus is not a valid choice"),
        (["DecileSweep", "--n-pairs", "-5"], UNHANDLED, "--n-pairs: -5 is not in the set of int in [1, inf)"),
        (["TrainOnFiltered", "--n-pairs", "-5"], UNHANDLED, "--n-pairs: -5 is not in the set of int in [0, inf)"),
        (["BackTranslate", "--beam-size", "0"], UNHANDLED, "--beam-size: 0 is not in the set of int in [1, inf)"),
        (["BuildParaNMT", "--TrainTranslator-max-epoch", "many"], SCHEDULING_FAILED, "max-epoch: invalid literal for int()"),
        (["AssignDeciles", "--pp-vectors", "x.txt", "--pp-encoder", "y"], SCHEDULING_FAILED, "give --pp-vectors or --pp-encoder, not both"),
    ],
    ids=["not-a-number", "unknown-scorer", "unknown-model", "negative-sweep-pairs", "negative-sample", "beam-0",
         "another-task's-value", "two-pp-models"],
)
def test_a_wrong_parameter_is_one_line_naming_it_and_exits_non_zero(tmp_path, args, status, expected):
    result = run_luigi(tmp_path / "work", *args)
    output = result.stdout + result.stderr
    assert result.returncode == status, output
    assert "Traceback" not in output, output
    line = next(line for line in output.splitlines() if expected in line)
    assert [line for line in output.splitlines() if expected in line or "ERROR" in line or "WARNING" in line] == [line], output
    assert expected in line[:120] and "=" not in line[line.rindex("["):], line  # the mistake first; the task by name, no parameter=value


def test_a_number_below_its_minimum_is_refused_from_python_too():
    with pytest.raises(ValueError, match="-5 is not in the set of int in \\[1, inf\\)"):
        DecileSweep(n_pairs=-5)
    with pytest.raises(ValueError, match="0 is not in the set of int in \\[1, inf\\)"):
        BackTranslate(beam_size=0)
    assert DecileSweep(n_pairs="7").n_pairs == 7


def test_a_setting_with_a_minimum_becomes_a_bounded_parameter():
    @with_settings(DecodeOptions)
    class Decoding:
        pass

    bounded = {f.name for f in settings_of(DecodeOptions) if f.metadata["minimum"] is not None}
    assert bounded == {"beam_size", "max_source_tokens", "max_len_a", "max_len_b", "batch_tokens"}
    assert all(isinstance(getattr(Decoding, name), AtLeast) for name in bounded)


def test_two_pp_models_stop_the_corpus_before_its_upstream_stages_are_scheduled():
    """Its requirements raise, so Luigi builds none of them (the back-translation first, before)."""
    with pytest.raises(InputError, match="give --pp-vectors or --pp-encoder, not both"):
        AssignDeciles(pp_vectors="x.txt", pp_encoder="y").requires()
