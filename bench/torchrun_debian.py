"""torchrun, as Debian ships it (PyTorch 1.13), made to run under Python 3.11: its
Std.from_str("0") returns None there (an IntFlag change in 3.11), so the launcher crashes on
its own defaults. This wraps that one function and runs torchrun with the given flags.

Usage: /usr/bin/python3 bench/torchrun_debian.py [torchrun's flags] SCRIPT [ARGS...]
"""
import sys

from torch.distributed.elastic.multiprocessing import api

_parse_std = api.Std.from_str.__func__


def _from_str(cls, text):
    parsed = _parse_std(cls, text)
    if parsed is None:  # a plain number, which 3.11's IntFlag no longer finds
        return cls(int(text))
    if isinstance(parsed, dict):
        return {rank: cls(0) if std is None else std for rank, std in parsed.items()}
    return parsed


api.Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    from torch.distributed.run import main
    sys.exit(main())
