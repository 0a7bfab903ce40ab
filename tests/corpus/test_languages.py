"""Language codes as users, file names and multilingual models spell them."""

import pytest

from corpus import languages
from corpus.errors import InputError

NLLB_CODES = ["ces_Latn", "deu_Latn", "eng_Latn", "fra_Latn", "rus_Cyrl", "srp_Cyrl", "zho_Hans", "zho_Hant"]
M2M_CODES = ["cs", "de", "en", "fr", "ru", "zh"]


def test_any_iso_639_code_is_one_language():
    assert {languages.standard_code(tag) for tag in ("de", "deu", "ger", "DE", " de ")} == {"de"}
    assert languages.codes("cs") == ("cs", "ces", "cze") and languages.file_suffixes("fr") == (".fr", ".fra", ".fre")
    with pytest.raises(InputError, match="'xx' is not a language code"):
        languages.standard_code("xx")


def test_a_multilingual_models_own_code_is_found():
    assert [languages.model_code(tag, M2M_CODES) for tag in ("deu", "cze", "en")] == ["de", "cs", "en"]
    assert [languages.model_code(tag, NLLB_CODES) for tag in ("de", "ces", "ru", "sr", "zh")] == [
        "deu_Latn", "ces_Latn", "rus_Cyrl", "srp_Cyrl", "zho_Hans"]
    with pytest.raises(InputError, match="no language code for 'tlh'"):
        languages.model_code("tlh", NLLB_CODES)
