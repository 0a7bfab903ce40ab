"""paranmt-translator fetch without internet: one line that says what to download and where."""

import os
import subprocess
import sys


def test_without_the_hub_it_says_in_one_line_what_to_download_by_hand(tmp_path):
    folder = tmp_path / "opus-mt-de-en"
    result = subprocess.run([sys.executable, "-m", "models.nmt.fetch", "fetch", "Helsinki-NLP/opus-mt-de-en", "--to", str(folder)],
                            capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert result.returncode == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert "https://huggingface.co/Helsinki-NLP/opus-mt-de-en/tree/main" in line and f"--translator {folder}" in line
    assert not folder.exists()
