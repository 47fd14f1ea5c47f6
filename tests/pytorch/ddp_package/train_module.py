"""Run as a module (`-m ddp_package.train_module`): the same training as ddp_train.py."""
import sys

from ddp_package import training

if __name__ == "__main__":
    training.main(sys.argv[1:])
