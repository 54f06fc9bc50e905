import sys

from capture.jvm import main

sys.exit(main())
