"""Tiny random Hugging Face translators (Marian, M2M-100) with real tokenizers, made in seconds.

The tokenizers are sentencepiece models trained on the embedded demo corpus's English and Czech
and on the German lines below; the weights are random (seeded). Two changes make the random
models behave like trained ones where the tests look: the end-of-sentence logit is raised, so
that some hypotheses end before the length limit (the beam scores of finished hypotheses are
checked too), and Marian's ``<pad>`` (its decoder-start token, which a trained model never
predicts) gets a very low logit, as training gives it.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import sentencepiece as spm

from workflows.ingest import demo_corpus

# Real German sentences (written for these tests), with their English.
GERMAN = [
    ("Der Zug nach Berlin hat heute zwanzig Minuten Verspätung.", "The train to Berlin is twenty minutes late today."),
    ("Meine Schwester wohnt seit drei Jahren in Wien.", "My sister has lived in Vienna for three years."),
    ("Kannst du mir bitte das Salz geben?", "Can you pass me the salt, please?"),
    ("Die Regierung hat ein neues Gesetz zum Klimaschutz beschlossen.", "The government has passed a new climate protection law."),
    ("Wir treffen uns morgen um acht Uhr vor dem Kino.", "We will meet tomorrow at eight in front of the cinema."),
    ("Das Museum ist montags geschlossen.", "The museum is closed on Mondays."),
    ("Er hat den ganzen Abend an seinem Roman geschrieben.", "He spent the whole evening writing his novel."),
    ("Im Winter fahren viele Familien in die Berge.", "In winter many families go to the mountains."),
    ("Der Arzt empfahl ihm, weniger Kaffee zu trinken.", "The doctor advised him to drink less coffee."),
    ("Die Preise für Mieten sind in den Städten stark gestiegen.", "Rents have risen sharply in the cities."),
    ("Ich habe meinen Schlüssel im Büro vergessen.", "I left my key at the office."),
    ("Nach dem Spiel feierten die Fans bis in die Nacht.", "After the match the fans celebrated into the night."),
]


def demo_lines() -> tuple[list[str], list[str]]:
    """The demo corpus's Czech and English sides."""
    czech, english = [], []
    with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
        for line in handle:
            _, _, cs, en = line.rstrip("\n").split("\t")
            czech.append(cs)
            english.append(en)
    return czech, english


def sentencepiece_model(lines: list[str], size: int, model_type: str = "unigram") -> bytes:
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buffer, vocab_size=size, model_type=model_type,
                                   hard_vocab_limit=False, minloglevel=2)
    return buffer.getvalue()


def _pieces(model: Path) -> list[str]:
    processor = spm.SentencePieceProcessor(model_file=str(model))
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def _small(config_class, **sizes):
    return config_class(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
                        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128, **sizes)


def _raise_end_of_sentence(model, bias: float) -> None:
    """Add ``bias`` to the end-of-sentence logit through the decoder's last layer norm (M2M-100 has
    no output bias): its output moves along the end-of-sentence embedding."""
    import torch

    with torch.no_grad():
        row = model.get_output_embeddings().weight[model.config.eos_token_id]
        model.model.decoder.layer_norm.bias += bias * row / row.norm() ** 2


def marian(folder: Path) -> Path:
    """A de→en Marian model with OPUS-MT's layout: source.spm, target.spm, vocab.json (``<pad>`` last)."""
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    czech, english = demo_lines()
    (folder / "source.spm").write_bytes(sentencepiece_model([de for de, _ in GERMAN] * 5 + czech, 400))
    (folder / "target.spm").write_bytes(sentencepiece_model(english + [en for _, en in GERMAN], 400))
    tokens = ["</s>", "<unk>", *_pieces(folder / "source.spm"), *_pieces(folder / "target.spm")]
    vocabulary = {token: index for index, token in enumerate(dict.fromkeys([*tokens, "<pad>"]))}
    (folder / "vocab.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"),
                    source_lang="de", target_lang="en").save_pretrained(folder)
    torch.manual_seed(0)
    pad = vocabulary["<pad>"]
    model = MarianMTModel(_small(MarianConfig, vocab_size=len(vocabulary), pad_token_id=pad, eos_token_id=0,
                                 decoder_start_token_id=pad, forced_eos_token_id=0))
    with torch.no_grad():
        model.final_logits_bias[0, pad] = -100.0
        model.final_logits_bias[0, 0] = 0.5
    model.save_pretrained(folder)
    return folder


def m2m_100(folder: Path) -> Path:
    """An M2M-100 model (its hundred language tokens) with one sentencepiece model for every language."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, M2M100Tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    czech, english = demo_lines()
    (folder / "sentencepiece.bpe.model").write_bytes(sentencepiece_model(czech + english + [s for pair in GERMAN for s in pair], 600))
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocabulary = {token: index for index, token in enumerate(dict.fromkeys([*specials, *_pieces(folder / "sentencepiece.bpe.model")]))}
    (folder / "vocab.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    tokenizer = M2M100Tokenizer(str(folder / "vocab.json"), str(folder / "sentencepiece.bpe.model"), src_lang="de", tgt_lang="en")
    tokenizer.save_pretrained(folder)
    size = max(tokenizer.lang_code_to_id.values()) + 1 + tokenizer.num_madeup_words
    torch.manual_seed(0)
    model = M2M100ForConditionalGeneration(_small(M2M100Config, vocab_size=size, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                  decoder_start_token_id=2))
    _raise_end_of_sentence(model, 0.05)
    model.save_pretrained(folder)
    return folder
