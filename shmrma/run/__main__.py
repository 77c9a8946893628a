"""``python -m shmrma.run`` is ``shmrma-run``."""
import sys

from .cli import main

sys.exit(main())
