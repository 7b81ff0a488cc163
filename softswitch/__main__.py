import sys

from softswitch.cli import main

sys.exit(main())
