"""python -m hbl.cli: the `hbl` command."""
import sys

from hbl.cli import main

sys.exit(main())
