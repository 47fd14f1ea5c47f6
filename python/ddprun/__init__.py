"""ddprun installed from its wheel: where its programs are.

    python -m ddprun ARGS...        runs `ddprun ARGS...` in this process's place (an exec)
    ddprun.program("ddprun")        the launcher's path; "ddprund": the daemon's
    ddprun.network_launcher()       the program ddprun runs for jobs on many hosts

The wheel puts `ddprun` and `ddprund` in the environment's scripts folder (bin/ of a virtual
environment) and the network launcher in libexec/ddprun/ under the environment's root, where
`ddprun` looks for it beside its own folder.
"""
import os
import sys
import sysconfig

__all__ = ["program", "network_launcher", "ProgramNotFound"]


class ProgramNotFound(FileNotFoundError):
    """A program of the wheel is not where its installation put it."""


def _scripts_folders():
    """Where pip may have put the wheel's scripts, the likeliest first: the bin/ of the root this
    package was installed under (<root>/lib/pythonX.Y/site-packages/ddprun), then the
    interpreter's scripts folder, then the user scheme's (pip install --user)."""
    package = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(package))))
    folders = [os.path.join(root, "bin"), sysconfig.get_path("scripts")]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        folders.append(sysconfig.get_path("scripts", scheme=user_scheme))
    return list(dict.fromkeys(folder for folder in folders if folder))


def program(name="ddprun"):
    """The path of the wheel's program `name` ("ddprun" or "ddprund")."""
    if name not in ("ddprun", "ddprund"):
        raise ValueError(f"the wheel has no program {name!r}: it has ddprun and ddprund")
    for folder in _scripts_folders():
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    raise ProgramNotFound(f"{name} is not installed beside the ddprun package (looked in "
                          f"{', '.join(_scripts_folders())}); reinstall the wheel")


def network_launcher():
    """The network launcher `ddprun` runs: libexec/ddprun/ddprun beside ddprun's folder."""
    launcher = os.path.normpath(os.path.join(os.path.dirname(program("ddprun")), os.pardir,
                                             "libexec", "ddprun", "ddprun"))
    if not os.access(launcher, os.X_OK):
        raise ProgramNotFound(f"the network launcher is not at {launcher}; reinstall the wheel")
    return launcher


def main(arguments=None):
    """`python -m ddprun ARGS...`: ddprun in this process's place, as if run from the shell."""
    try:
        path = program("ddprun")
    except ProgramNotFound as error:
        print(f"ddprun: error: {error}", file=sys.stderr)
        return 1
    arguments = sys.argv[1:] if arguments is None else arguments
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path, *arguments])
