"""The offline install kit (`paranmt-kit`): a folder with every distribution a machine without
internet needs to install this package, and the script that installs it there. No Beam, Luigi or
torch at import time: the command starts fast."""
