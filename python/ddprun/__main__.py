"""`python -m ddprun ARGS...`: runs ddprun ARGS... in this process's place."""
import sys

from ddprun import main

sys.exit(main())
