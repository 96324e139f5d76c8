"""``python -m langchain_tiered_memory.cli``."""

import sys

from langchain_tiered_memory.cli import main

sys.exit(main())
