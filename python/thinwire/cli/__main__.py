"""`python -m thinwire.cli`: the `thinwire` command."""

import sys

from . import main

sys.exit(main())
