import sys

from haki.cli import main

sys.exit(main())
