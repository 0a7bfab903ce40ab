"""Where the evaluation data is set and how a user gets it: the line an evaluation without its files ends with.

The files themselves are downloaded by ``paranmt-data`` (fetch.evaluation_data): network
fetching is no part of corpus/, which only reads them.
"""

# The setting of the workflows that reads each kind of data (workflows/encoders.py `[sts] dir`).
# What luigi.cfg sets to read a fetched folder (MRPC lies in msrp/ of the transfer folder).
SETTINGS = {"sts": "[sts] dir = {dir}", "transfer": "[transfer] dir = {dir} and [transfer] mrpc_dir = {dir}/msrp"}


def fetch_hint(kind: str) -> str:
    """How a user gets the `kind` files: the one line an evaluation without its data ends with."""
    return f"get them with `paranmt-data fetch {kind} --to DIR`, then set {SETTINGS[kind].format(dir='DIR')} in luigi.cfg"
