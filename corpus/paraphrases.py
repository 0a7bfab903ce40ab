"""Text logic of several paraphrases per source: which of the reference's words a constrained
decoder bans, how alike two paraphrases are, and ParaBank 2's clustering of candidates.

Words here are ``*_tok`` tokens (lowercased Moses tokens, ``corpus.text.english_tokens``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """English function words: scikit-learn's list (the Glasgow Information Retrieval Group's 318
    words), a content word's complement."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def content_words(tokens: str) -> list[str]:
    """The distinct content words of a ``*_tok`` sentence (a letter in them, not a function
    word), longest first and in the sentence's order among equals: the longer a word, the
    rarer it tends to be, and the more a paraphrase that avoids it must say it another way."""
    stops = stop_words()
    words = dict.fromkeys(word for word in tokens.split() if any(c.isalpha() for c in word) and word not in stops)
    return sorted(words, key=lambda word: -len(word))


# A source word that begins with a reference word this long or longer holds it inflected (Czech
# "Tomovi", "Obamy" for Tom, Obama); a shorter reference word counts only when the source has it whole.
INFLECTED_FROM_LETTERS = 3


def source_words(source: str) -> list[str]:
    """The lowercased words of a foreign sentence, for ``held_by_source``."""
    return re.findall(r"\w+", source.lower())


def held_by_source(word: str, words: Sequence[str]) -> bool:
    """Whether the foreign source sentence whose ``source_words`` are ``words`` holds ``word`` of
    its reference, whole or with an ending: a name, a brand, a loanword or a code the translation
    carries over. Such a word has no other way to be said: a search that may not say it says
    another name or drops it (csen-more: Tom, Mary, Obama, Twitter, park, police hold 7 % of the
    words banned, in 28 % of the sources)."""
    return word in words or len(word) >= INFLECTED_FROM_LETTERS and any(held.startswith(word) for held in words)


def banned_sets(tokens: str, sets: int, per_set: int, source: str = "") -> list[tuple[str, ...]]:
    """Up to ``sets`` disjoint sets of ``per_set`` content words of a reference (fewer where it
    has fewer words), none that its foreign ``source`` holds (``held_by_source``): the words each
    constrained decoding of the source bans (ParaBank: each set of negative constraints gives one
    paraphrase)."""
    held = source_words(source)
    words = [word for word in content_words(tokens) if not held_by_source(word, held)]
    return [tuple(words[start:start + per_set]) for start in range(0, min(len(words), sets * per_set), per_set)]


def compatible_groups(banned: Sequence[Sequence[str]], said: Sequence[set[str]], most: int) -> list[list[int]]:
    """Items (constrained searches) in groups that may share one list of banned words, first fit
    in the given order: an item joins a group when no word the group bans is one its source's
    best translation says (unless the item bans it too), no word it bans is said by a member's,
    and the group has fewer than ``most``. A decoder that bans words per call, not per sentence
    (CTranslate2), then decodes a group in batches, each item kept from the words it would say only
    when they are its own to avoid."""
    groups: list[tuple[list[int], set[str], set[str]]] = []
    for item, (bans, says) in enumerate(zip(banned, said, strict=True)):
        bans = set(bans)
        for members, group_bans, group_says in groups:
            if len(members) < most and not (group_bans - bans) & says and not bans & group_says:
                members.append(item)
                group_bans |= bans
                group_says |= says
                break
        else:
            groups.append(([item], bans, set(says)))
    return [members for members, _, _ in groups]


def unigram_f1(one: Sequence[str], other: Sequence[str]) -> float:
    """Unigram F1 of two token lists as bags (COLUMNS.md: unigram_f1); 0 when nothing is shared."""
    shared = sum((Counter(one) & Counter(other)).values())
    return 2 * shared / (len(one) + len(other)) if shared else 0.0


def used_banned(tokens: Sequence[str], banned: Sequence[str]) -> list[str]:
    """The banned words a translation still says (a ban holds pieces, and a word can be spelled
    in other pieces than the ones banned)."""
    said = set(tokens)
    return [word for word in banned if word in said]


def cluster_representatives(tokens: Sequence[Sequence[str]], scores: Sequence[float], seeds: Sequence[Sequence[str]],
                            threshold: float, wanted: int) -> list[int]:
    """ParaBank 2's clustering, greedy: candidates in the order of their scores (best first;
    equal scores in their given order) each join the first cluster whose representative it
    resembles (unigram F1 ≥ ``threshold``) or start a cluster of its own as its representative;
    ``seeds`` are representatives already kept. The indices of at most ``wanted`` new
    representatives, in the order they were found."""
    kept: list[Sequence[str]] = list(seeds)
    found: list[int] = []
    for index in sorted(range(len(tokens)), key=lambda i: -scores[i]):
        if len(found) == wanted:
            break
        if all(unigram_f1(tokens[index], representative) < threshold for representative in kept):
            kept.append(tokens[index])
            found.append(index)
    return found


def sibling_f1(tokens: Sequence[Sequence[str]]) -> list[float | None]:
    """Each sibling's highest unigram F1 with another sibling (None for a source with one)."""
    if len(tokens) < 2:
        return [None] * len(tokens)
    return [max(unigram_f1(mine, other) for j, other in enumerate(tokens) if j != i) for i, mine in enumerate(tokens)]
