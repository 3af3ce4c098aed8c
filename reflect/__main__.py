import sys

from reflect.cli.launch import main

sys.exit(main())
