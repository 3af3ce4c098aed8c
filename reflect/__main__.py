import sys

from reflect.cli import main

sys.exit(main())
