import sys

from haki_local.cli import main

sys.exit(main())
