import sys

from blklab.cli import main

sys.exit(main())
