"""What the torch 2.x scripts beside this file print to compare runs: a digest of a model's
parameters, bit for bit, so that the same training under torchrun and under ddprun must give the
same line."""
import hashlib


def weights_digest(model):
    """The SHA-256 of every parameter's bytes, in the model's order, as 16 hex digits."""
    digest = hashlib.sha256()
    for parameter in model.parameters():
        digest.update(parameter.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]
