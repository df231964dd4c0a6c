import sys

from scheduler.operator.main import main

sys.exit(main())
