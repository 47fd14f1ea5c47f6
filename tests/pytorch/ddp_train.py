"""An ordinary PyTorch DDP training script, as people launch with torchrun; see
ddp_package/training.py for what it does.

    torchrun --nproc_per_node=2 ddp_train.py --epochs 1 --out model.pt
    ddprun --standalone --nproc_per_node=2 ddp_train.py --epochs 1 --out model.pt
"""
import sys

from ddp_package import training

if __name__ == "__main__":
    training.main(sys.argv[1:])
