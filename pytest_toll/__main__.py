import sys

from pytest_toll.cli import main

sys.exit(main())
