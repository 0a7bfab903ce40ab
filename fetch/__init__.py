"""Downloads of public data (network fetching, which corpus/ only reads the results of): ``paranmt-data``."""
