import sys

from reflect.launch import main

sys.exit(main())
