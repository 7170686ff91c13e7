"""``python -m llqm_core.cli``: the ``llqm`` command."""

import sys

from . import main

sys.exit(main())
