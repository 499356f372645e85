import sys

from memlake.cli import main

sys.exit(main())
