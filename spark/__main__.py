import sys

from spark.cli import main

sys.exit(main())
