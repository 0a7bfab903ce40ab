"""The text logic of several paraphrases a source: banned words, groups that share them, clusters."""

from corpus import paraphrases


def test_content_words_leave_out_function_words_and_punctuation_longest_first():
    assert paraphrases.content_words("the old man was reading a newspaper in the park , 2 times .") == [
        "newspaper", "reading", "times", "park", "old", "man"]


def test_banned_sets_are_disjoint_and_stop_where_the_words_do():
    sets = paraphrases.banned_sets("the old man was reading a newspaper in the park .", sets=4, per_set=2)
    assert sets == [("newspaper", "reading"), ("park", "old"), ("man",)]
    assert paraphrases.banned_sets("it is .", sets=4, per_set=2) == []


def test_a_word_the_source_holds_whole_or_inflected_is_never_banned():
    reference = "tom gave mary the old newspaper in the park ."
    assert paraphrases.banned_sets(reference, sets=4, per_set=2) == [("newspaper", "gave"), ("mary", "park"), ("tom", "old")]
    # Tomovi: Tom inflected; Mary whole; "parku" holds park; "ol" is too short to be "old" inflected
    assert paraphrases.banned_sets(reference, sets=4, per_set=2, source="Tomovi dala Mary starý list v parku, ol") == [
        ("newspaper", "gave"), ("old",)]


def test_a_group_never_bans_a_word_a_member_says_unless_the_member_bans_it_itself():
    banned = [("dog",), ("cat",), ("house",), ("dog", "tree")]
    said = [{"the", "dog", "runs"}, {"a", "cat", "sleeps"}, {"dog", "house"}, {"dog", "tree"}]
    groups = paraphrases.compatible_groups(banned, said, most=10)
    assert sorted(i for group in groups for i in group) == [0, 1, 2, 3]
    for group in groups:
        for member in group:
            others = {word for other in group if other != member for word in banned[other]}
            assert not (others - set(banned[member])) & said[member]
    assert paraphrases.compatible_groups([("a",)] * 5, [set()] * 5, most=2) == [[0, 1], [2, 3], [4]]


def test_clusters_keep_one_representative_per_group_of_alike_candidates_best_first():
    seeds = [["the", "dog", "runs"]]
    candidates = [["the", "dog", "runs", "fast"], ["a", "hound", "is", "running"], ["a", "hound", "runs"], ["the", "dog", "runs"]]
    scores = [-0.5, -1.0, -0.8, -0.2]
    # best first: the copy of the seed and "… fast" (F1 0.86 with it) join its cluster
    assert paraphrases.cluster_representatives(candidates, scores, seeds, threshold=0.7, wanted=5) == [2, 1]
    kept = paraphrases.cluster_representatives(candidates, scores, seeds, threshold=0.5, wanted=5)
    assert kept == [2]  # "a hound is running" shares half its words with "a hound runs"
    assert paraphrases.cluster_representatives(candidates, scores, seeds, threshold=1.01, wanted=2) == [3, 0]


def test_sibling_f1_is_each_ones_highest_overlap_with_another():
    assert paraphrases.sibling_f1([["a", "b"]]) == [None]
    assert paraphrases.sibling_f1([["a", "b"], ["a", "b"], ["c"]]) == [1.0, 1.0, 0.0]
