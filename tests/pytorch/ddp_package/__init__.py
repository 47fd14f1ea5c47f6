"""A package whose module is run with `ddprun -m ddp_package.train_module`, as with torchrun -m."""
