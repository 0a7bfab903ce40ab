import numpy as np
import pytest

from corpus.language import LanguageModel, cache_path

CZECH = [
    "Dnes ráno jsem šel do práce pěšky, protože autobus nejel.",
    "Vláda schválila nový zákon o ochraně přírody.",
    "Můžete mi prosím říct, kde je nádraží?",
    "Děti si hrají na zahradě se psem.",
]
ENGLISH = [
    "This morning I walked to work because the bus was not running.",
    "The government approved a new law on nature protection.",
    "Could you please tell me where the railway station is?",
    "The children are playing in the garden with the dog.",
]
THRESHOLD = 0.5  # Rules.min_p_en's default
TOLERANCE = 1e-5  # the float32 rows (corpus.language); measured: 3.2e-6 at most on the benchmark's and WMT21's sentences


def langid_p_en(texts):
    """langid.py's own answer, one sentence at a time: the oracle."""
    import langid.langid

    identifier = langid.langid.LanguageIdentifier.from_modelstring(langid.langid.model, norm_probs=True)
    return np.array([dict(identifier.rank(text))["en"] for text in texts])


def test_czech_is_not_english_and_english_is():
    p_en = LanguageModel.load().probability(CZECH + ENGLISH)
    assert (p_en[:4] < 1e-9).all() and (p_en[4:] > 1 - 1e-9).all()


def test_the_batch_equals_langid_one_sentence_at_a_time():
    # odd cases: an empty side, one byte, a sentence with no feature (langid falls back to its
    # prior), a short Czech line langid takes for English, and 4-byte UTF-8
    texts = [*CZECH, *ENGLISH, "", "a", "I see.", "Nejde to tryskem.", "emoji 😀 ok"]
    np.testing.assert_allclose(LanguageModel.load().probability(texts), langid_p_en(texts), rtol=0, atol=TOLERANCE)
    assert LanguageModel.load().probability([]).shape == (0,)


@pytest.mark.slow
def test_real_czech_and_english_lines(shared_path):
    """WMT21 news test: the Czech source and the human English reference (1,000 lines each)."""
    wmt = shared_path("csen", "wmt21")
    czech = (wmt / "newstest2021.cs-en.src.cs").read_text(encoding="utf-8").splitlines()
    english = (wmt / "newstest2021.cs-en.ref.A.en").read_text(encoding="utf-8").splitlines()
    model = LanguageModel.load()
    p_cs, p_en = model.probability(czech), model.probability(english)
    np.testing.assert_allclose(p_cs[:100], langid_p_en(czech[:100]), rtol=0, atol=TOLERANCE)
    np.testing.assert_allclose(p_en[:100], langid_p_en(english[:100]), rtol=0, atol=TOLERANCE)
    # measured: 1 Czech line of 1,000 passes ("Nejde to tryskem."), 977 English lines pass
    # (the others are mostly Czech names: "According to Nováková, no one arrived at Blažim.")
    assert (p_cs >= THRESHOLD).sum() <= 3 and (p_en >= THRESHOLD).mean() > 0.95
    assert p_cs[czech.index("Debutant šampionem!")] < THRESHOLD


def test_the_rearranged_model_is_cached_per_machine_and_rebuilt_without_a_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PARANMT_CACHE", str(tmp_path / "cache"))
    LanguageModel.load.cache_clear()
    try:
        built = LanguageModel.load()
        assert cache_path().parent == tmp_path / "cache" and cache_path().exists()
        LanguageModel.load.cache_clear()
        cached = LanguageModel.load()
        for name in ("next_state", "state_log_probs", "emits", "prior"):
            np.testing.assert_array_equal(getattr(cached, name), getattr(built, name))
        assert cached.languages == built.languages and "en" in cached.languages
        cache_path().write_bytes(b"not a model")  # a damaged cache is rebuilt
        LanguageModel.load.cache_clear()
        assert LanguageModel.load().languages == built.languages
        monkeypatch.setenv("PARANMT_CACHE", str(cache_path()))  # a file where the folder should be: not writable
        LanguageModel.load.cache_clear()
        np.testing.assert_array_equal(LanguageModel.load().prior, built.prior)
    finally:
        LanguageModel.load.cache_clear()


def test_arrow_slices_and_chunks_give_what_a_list_gives():
    import pyarrow as pa

    texts = [*CZECH, *ENGLISH, "", "emoji 😀 ok"]
    model = LanguageModel.load()
    expected = model.probability(texts)
    chunked = pa.chunked_array([pa.array(texts[:3]), pa.array(texts[3:])])
    np.testing.assert_array_equal(model.probability(chunked), expected)
    np.testing.assert_array_equal(model.probability(pa.array(["padding", *texts]).slice(1)), expected)
    np.testing.assert_array_equal(model.probability(pa.array(texts, pa.large_string())), expected)
