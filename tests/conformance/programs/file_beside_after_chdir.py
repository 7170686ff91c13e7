"""A script that reads a file beside it through ``os.path.dirname(__file__)`` after a ``chdir``,
which works because Python makes the main script's ``__file__`` absolute.

llqm-expect:
"""

import os
import tempfile

os.chdir(tempfile.gettempdir())
with open(os.path.join(os.path.dirname(__file__), "data_beside_after_chdir.txt")) as data:
    print(data.read().strip())
