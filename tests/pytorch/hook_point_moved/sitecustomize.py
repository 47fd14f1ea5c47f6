"""A torch whose DDP has moved one of the hook points ddprun's hang detection uses, for the test
that ddprun then says so: put on PYTHONPATH, this runs as the sitecustomize that ddprun's own
shadows (ddprun's runs it last), and changes torch as a future release might. Once
torch.nn.parallel.distributed is imported, and before ddprun's hook sees it (this finder stands
after ddprun's on sys.meta_path, so ddprun's asks it for the module), DistributedDataParallel's
__init__ takes its arguments as **kwargs, with no process_group parameter: DDP works as before,
but ddprun cannot hand it a counting group."""
import sys

_MODULE = "torch.nn.parallel.distributed"


def _move_hook_point(module):
    ddp = module.DistributedDataParallel
    initialize = ddp.__init__

    def moved_init(self, module, *args, **kwargs):
        initialize(self, module, *args, **kwargs)

    moved_init.__doc__ = initialize.__doc__  # no __wrapped__: its signature is its own
    ddp.__init__ = moved_init


class _AfterDdpImport:
    def find_spec(self, name, path=None, target=None):
        if name != _MODULE:
            return None
        # Only the finders after this one: ddprun's, before it, asks this one.
        for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:
            if not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _move_hook_point(module)
        spec.loader.exec_module = exec_module
        return spec


# After ddprun's finder (first on sys.meta_path when ddprun's sitecustomize ran), before the rest.
sys.meta_path.insert(1 if sys.meta_path else 0, _AfterDdpImport())
