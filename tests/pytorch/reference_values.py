"""Reference values from real PyTorch for the runtime's equivalence tests
(tests/integration/pytorch/runtime_vs_torch_test.cc). Prints one fact per line, floats with 9
significant digits (a float32 exactly):

    sampler N WORLD RANK SEED EPOCH SHUFFLE DROP_LAST : i0 i1 ...
        torch.utils.data.DistributedSampler's indices, for a grid of settings
    optimizer NAME init|grad STEP|final : v0 v1 ...
        torch.optim.SGD/Adam/AdamW over 5 steps of given gradients (NAME fixes the options)
    mlp param NAME | x STEP | y STEP | loss STEP | final NAME : v0 v1 ...
        the seeds' MLP, Linear(10,50) -> ReLU -> Linear(50,1), MSE, Adam(lr=1e-3), 5 steps of
        batch 16, from the printed initial weights and data
"""
import torch
from torch.utils.data import DistributedSampler


def floats(tensor):
    return " ".join(f"{v:.9g}" for v in tensor.detach().flatten().tolist())


def samplers():
    for n in (1, 7, 10, 23, 100, 1000):
        for world in (1, 2, 3, 4):
            for rank in range(world):
                for seed in (0, 7):
                    for epoch in (0, 3):
                        for shuffle in (0, 1):
                            for drop_last in (0, 1):
                                sampler = DistributedSampler(
                                    range(n), num_replicas=world, rank=rank,
                                    shuffle=bool(shuffle), seed=seed, drop_last=bool(drop_last))
                                sampler.set_epoch(epoch)
                                indices = " ".join(str(i) for i in sampler)
                                print(f"sampler {n} {world} {rank} {seed} {epoch} {shuffle} "
                                      f"{drop_last} : {indices}")


OPTIMIZERS = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1,
                                              weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.02),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.05),
}


def optimizers():
    for name, make in OPTIMIZERS.items():
        generator = torch.Generator().manual_seed(11)
        value = torch.rand(37, generator=generator) * 2 - 1
        parameter = torch.nn.Parameter(value.clone())
        optimizer = make([parameter])
        print(f"optimizer {name} init : {floats(parameter)}")
        for step in range(5):
            grad = torch.rand(37, generator=generator) * 2 - 1
            print(f"optimizer {name} grad {step} : {floats(grad)}")
            parameter.grad = grad.clone()
            optimizer.step()
        print(f"optimizer {name} final : {floats(parameter)}")


def mlp():
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(10, 50), torch.nn.ReLU(), torch.nn.Linear(50, 1))
    names = {"0.weight": "fc1.weight", "0.bias": "fc1.bias", "2.weight": "fc2.weight",
             "2.bias": "fc2.bias"}
    for key, parameter in model.state_dict().items():
        print(f"mlp param {names[key]} : {floats(parameter)}")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    generator = torch.Generator().manual_seed(5)
    for step in range(5):
        x = torch.rand(16, 10, generator=generator) * 2 - 1
        y = torch.rand(16, 1, generator=generator) * 2 - 1
        print(f"mlp x {step} : {floats(x)}")
        print(f"mlp y {step} : {floats(y)}")
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"mlp loss {step} : {loss.item():.9g}")
    for key, parameter in model.state_dict().items():
        print(f"mlp final {names[key]} : {floats(parameter)}")


if __name__ == "__main__":
    samplers()
    optimizers()
    mlp()
