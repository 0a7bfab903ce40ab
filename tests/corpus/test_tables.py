from conftest import squeezed

from corpus.tables import html_table, markdown_table


def test_markdown_keeps_the_table_intact_whatever_the_cell_text():
    text = markdown_table(["name", "score"], [["a|b", "71.2"], ["two\nlines", "–"]], align_right=(1,))
    lines = squeezed(text).splitlines()
    assert lines[0] == "| name | score |" and lines[1].endswith("---: |")
    assert lines[2:] == ["| a\\|b | 71.2 |", "| two lines | – |"]


def test_html_escapes_every_cell():
    page = html_table(["<b>", "n"], [["<script>", "1"]])
    assert "&lt;script&gt;" in page and "<script>" not in page and "&lt;b&gt;" in page
